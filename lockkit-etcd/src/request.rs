//! Request time limits and retries: [`within`] bounds one request to etcd,
//! [`with_patience`] retries an idempotent one through transient errors.

use std::future::Future;
use std::time::Duration;

use lockkit_core::LockError;

use super::error::{connection, etcd_error};

/// Runs `f`, failing with a retryable `Connection` error if it takes over `limit`.
pub(crate) async fn within<T>(
    limit: Duration,
    what: &str,
    f: impl Future<Output = Result<T, etcd_client::Error>>,
) -> Result<T, LockError> {
    match tokio::time::timeout(limit, f).await {
        Ok(r) => r.map_err(etcd_error),
        Err(_) => Err(connection(format!(
            "{what}: no answer from etcd within {}",
            lockkit_core::human_duration(limit)
        ))),
    }
}

/// Runs `f` again on retryable errors (an endpoint down, an election) for up to
/// `patience`, with backoff. Only for idempotent requests.
pub(crate) async fn with_patience<T, F, Fut>(patience: Duration, mut f: F) -> Result<T, LockError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, LockError>>,
{
    let until = tokio::time::Instant::now() + patience;
    let mut backoff = Duration::from_millis(20);
    loop {
        match f().await {
            Err(e) if e.is_retryable() && tokio::time::Instant::now() + backoff < until => {
                tracing::debug!(error = %e, "transient etcd error; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_millis(250));
            }
            r => return r,
        }
    }
}
