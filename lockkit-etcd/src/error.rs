//! From etcd-client errors to [`LockError`], and request time limits.

use std::future::Future;
use std::time::Duration;

use lockkit_core::LockError;

use super::NAME;

/// A client error as a [`LockError`]: transport failures are `Connection`, server
/// answers are `Backend`; both are retryable.
pub(crate) fn etcd_error(e: etcd_client::Error) -> LockError {
    match e {
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => {
            LockError::connection(NAME, e)
        }
        e => LockError::backend(NAME, e),
    }
}

/// Whether the server refused a request because the lease is gone.
pub(crate) fn is_lease_not_found(e: &etcd_client::Error) -> bool {
    let text = e.to_string();
    text.contains("lease not found")
}

/// Runs `f`, failing with a retryable `Connection` error if it takes over `limit`.
pub(crate) async fn within<T>(
    limit: Duration,
    what: &str,
    f: impl Future<Output = Result<T, etcd_client::Error>>,
) -> Result<T, LockError> {
    match tokio::time::timeout(limit, f).await {
        Ok(r) => r.map_err(etcd_error),
        Err(_) => Err(LockError::Connection {
            driver: NAME,
            message: format!(
                "{what}: no answer from etcd within {}",
                lockkit_core::human_duration(limit)
            ),
            source: None,
        }),
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
