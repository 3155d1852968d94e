//! Redlock's clock arithmetic: how long one request to one master may take, the
//! clock-drift allowance, and so how long a grant or renewal stays valid.

use std::time::Duration;

use tokio::time::Instant;

use super::driver::RedlockDriver;

/// The shortest per-master request timeout (loopback under load still answers).
const MIN_REQUEST_TIMEOUT: Duration = Duration::from_millis(50);

impl RedlockDriver {
    /// A tenth of the TTL, at least [`MIN_REQUEST_TIMEOUT`], at most the configured cap.
    pub(super) fn request_timeout(&self, ttl: Duration) -> Duration {
        (ttl / 10)
            .max(MIN_REQUEST_TIMEOUT)
            .min(self.inner.request_timeout)
    }

    /// The clock-drift allowance for a lease of `ttl`: 1 % plus the fixed part.
    pub(super) fn drift(&self, ttl: Duration) -> Duration {
        ttl / 100 + self.inner.drift
    }

    /// The lease's validity end for a request sent at `sent` (invariant RL1).
    pub(super) fn valid_until(&self, sent: Instant, ttl: Duration) -> Instant {
        sent + ttl.saturating_sub(self.drift(ttl))
    }
}
