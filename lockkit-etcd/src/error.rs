//! From etcd-client errors to [`LockError`], and request time limits.

use std::future::Future;
use std::time::Duration;

use lockkit_core::LockError;

use super::NAME;

/// A client error as a [`LockError`]: transport failures (and a request that timed
/// out or could not reach a server) are `Connection`, other server answers are
/// `Backend`; both are retryable. The message is [`describe`]'s.
pub(crate) fn etcd_error(e: etcd_client::Error) -> LockError {
    let message = describe(&e);
    let transport = match &e {
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => true,
        etcd_client::Error::GRpcStatus(s) => matches!(
            s.code(),
            tonic::Code::Unavailable | tonic::Code::Cancelled | tonic::Code::DeadlineExceeded
        ),
        _ => false,
    };
    let source = Some(Box::new(e) as Box<dyn std::error::Error + Send + Sync>);
    if transport {
        LockError::Connection {
            driver: NAME,
            message,
            source,
        }
    } else {
        LockError::Backend {
            driver: NAME,
            message,
            source,
        }
    }
}

/// What went wrong, in words: a gRPC status as its code and message (tonic's own
/// `Display` dumps its fields, metadata and all), a transport error with the
/// cause that matters ("connection refused", a certificate problem) from a few
/// sources down, each said once.
pub(crate) fn describe(e: &etcd_client::Error) -> String {
    match e {
        etcd_client::Error::GRpcStatus(status) => {
            if status.message() == "Timeout expired" {
                return "no answer in time (request_timeout_ms, connect_timeout_ms)".to_string();
            }
            let mut out = if status.message().is_empty() {
                status.code().description().to_string()
            } else {
                status.message().to_string()
            };
            if let Some(cause) = std::error::Error::source(status) {
                let cause = transport_chain(cause);
                if cause.contains(&out) {
                    out = cause;
                } else if !out.contains(&cause) {
                    out.push_str(": ");
                    out.push_str(&cause);
                }
            }
            out
        }
        etcd_client::Error::TransportError(t) => transport_chain(t),
        other => lockkit_core::error_chain(other),
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

/// A transport error's chain, without tonic's "transport error: " (it adds nothing).
fn transport_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let chain = lockkit_core::error_chain(e);
    chain
        .strip_prefix("transport error: ")
        .map(str::to_string)
        .unwrap_or(chain)
}
