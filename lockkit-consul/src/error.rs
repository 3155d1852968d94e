//! Consul's answers, and failed requests, as [`LockError`]s.

use std::time::Duration;

use lockkit_core::LockError;

use crate::driver::NAME;
use reqwest::StatusCode;

/// What went wrong with a request, cause included ("error sending request" says
/// nothing by itself), without the URL (it may carry `?token=`).
pub(crate) fn http_error(e: reqwest::Error, limit: Duration, https: bool) -> String {
    if e.is_timeout() {
        return format!(
            "no answer within {} (request_timeout_ms, connect_timeout_ms)",
            lockkit_core::human_duration(limit)
        );
    }
    let text = lockkit_core::url::redact_urls_in(&lockkit_core::error_chain(&e.without_url()));
    let hint = crate::tls::hint(&text, https);
    format!("{text}{hint}")
}

/// A reply Consul should not have given: `what` was being done. "No cluster
/// leader" (a 500 while Consul's servers elect one, for seconds) is a
/// `Connection` error: the agent cannot reach a server that decides, as when the
/// agent itself is out of reach, and a waiting acquire waits it out.
pub(crate) fn backend(what: &str, status: StatusCode, body: &str) -> LockError {
    if status == StatusCode::INTERNAL_SERVER_ERROR && body.contains("No cluster leader") {
        return LockError::Connection {
            driver: NAME,
            message: format!("{what}: Consul has no cluster leader (an election in progress)"),
            source: None,
        };
    }
    LockError::Backend {
        driver: NAME,
        message: format!("{what}: Consul answered {status}: {}", body.trim()),
        source: None,
    }
}

/// A refused session setting, or else [`backend`].
pub(crate) fn config_or_backend(what: &str, status: StatusCode, body: &str) -> LockError {
    // Consul answers 500 for session settings it refuses (a TTL out of range).
    let refused_setting = [
        "Invalid Session TTL",
        "Session TTL",
        "Invalid Behavior",
        "LockDelay",
    ]
    .iter()
    .any(|m| body.contains(m));
    if status == StatusCode::BAD_REQUEST || refused_setting {
        LockError::Config(format!("{what}: Consul refused it: {}", body.trim()))
    } else {
        backend(what, status, body)
    }
}
