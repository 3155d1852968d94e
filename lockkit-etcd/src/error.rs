//! From etcd-client errors to [`LockError`] (the cause chain said once), and the
//! driver's own errors (a hold gone, a failed renewal batch).

use lockkit_core::LockError;

use super::driver::NAME;

/// A retryable `Connection` error of this driver.
pub(crate) fn connection(message: impl Into<String>) -> LockError {
    LockError::Connection {
        driver: NAME,
        message: message.into(),
        source: None,
    }
}

/// A retryable `Backend` error of this driver.
pub(crate) fn backend(message: impl Into<String>) -> LockError {
    LockError::Backend {
        driver: NAME,
        message: message.into(),
        source: None,
    }
}

/// The renewal answer for a hold whose key is no longer ours.
pub(crate) fn gone(key: impl std::fmt::Display) -> LockError {
    LockError::lost(
        key,
        "its etcd key is gone (deleted, expired, or taken over)",
    )
}

/// The renewal answer for a hold whose key the watch saw deleted.
pub(crate) fn deleted(key: impl std::fmt::Display) -> LockError {
    LockError::lost(
        key,
        "its etcd key was deleted (force-released or removed by hand)",
    )
}

/// A retryable error for every renewal in a failed batch.
pub(crate) fn batch_error(e: &LockError) -> LockError {
    backend(e.to_string())
}

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

/// A transport error's chain, without tonic's "transport error: " (it adds nothing).
fn transport_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let chain = lockkit_core::error_chain(e);
    chain
        .strip_prefix("transport error: ")
        .map(str::to_string)
        .unwrap_or(chain)
}
