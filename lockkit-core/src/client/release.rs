//! Giving a hold back: a release that fails is tried again, until it succeeds or
//! the hold's lease ends, so that a backend error never leaves a lock held in
//! silence.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::driver::LockDriver;
use crate::error::{LockError, Result};
use crate::types::{LockKey, OwnerId};
use crate::wait::{Backoff, Jitter};

/// The pauses between release attempts.
const PAUSES: Backoff = Backoff::new(
    Duration::from_millis(50),
    Duration::from_secs(1),
    Jitter::Spread,
);

/// The longest one attempt may take: a backend that answers nothing in this
/// time is tried again (drivers bound their requests more tightly still).
const ATTEMPT_LIMIT: Duration = Duration::from_secs(10);

/// One hold to release: whose, and until when trying again makes sense.
#[derive(Debug, Clone)]
pub(crate) struct Release {
    pub(crate) driver: Arc<dyn LockDriver>,
    pub(crate) key: LockKey,
    pub(crate) owner: OwnerId,
    /// When the hold's lease ends on the backend unless renewed (nothing renews
    /// it once its release has begun).
    pub(crate) deadline: Instant,
}

impl Release {
    /// Releases: whether the backend still had the hold. An attempt that fails
    /// is made again after a pause, for as long as the lease lasts.
    ///
    /// # Errors
    ///
    /// [`LockError::ReleaseFailed`] once the lease has ended with every attempt
    /// failed; an error that retrying cannot mend (a refused capability, a bad
    /// setting) at once.
    pub(crate) async fn run(&self) -> Result<bool> {
        let mut pauses = PAUSES.pauses();
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let attempt =
                tokio::time::timeout(ATTEMPT_LIMIT, self.driver.release(&self.key, &self.owner))
                    .await
                    .unwrap_or_else(|_| {
                        Err(LockError::Connection {
                            driver: self.driver.name(),
                            message: format!(
                                "no answer within {}",
                                crate::human::human_duration(ATTEMPT_LIMIT)
                            ),
                            source: None,
                        })
                    });
            let error = match attempt {
                // After a failed attempt, "not held" most likely means that
                // attempt freed it before its answer was lost.
                Ok(_) if attempts > 1 => {
                    tracing::warn!(key = %self.key, attempt = attempts, "released on a later try");
                    return Ok(true);
                }
                Ok(held) => return Ok(held),
                Err(e) if !e.is_retryable() => return Err(e),
                Err(e) => e,
            };
            let pause = pauses.next_pause();
            if Instant::now() + pause >= self.deadline {
                return Err(self.failed(attempts, error));
            }
            tracing::warn!(key = %self.key, attempt = attempts, %error, "a release failed; trying again");
            tokio::time::sleep(pause).await;
        }
    }

    fn failed(&self, attempts: u32, last: LockError) -> LockError {
        let then = if self.driver.capabilities().lease_expiry {
            "the lock is freed when its lease ends"
        } else {
            "the lock stays held until the driver's session ends"
        };
        LockError::ReleaseFailed {
            key: self.key.to_string(),
            attempts,
            then,
            last: Box::new(last),
        }
    }

    /// Releases on a background task, if a Tokio runtime is available, trying
    /// again as [`run`](Self::run) does.
    pub(crate) fn in_background(self) {
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    match self.run().await {
                        Ok(_) => tracing::debug!(key = %self.key, "released in background"),
                        Err(error) => {
                            tracing::warn!(key = %self.key, %error, "background release failed")
                        }
                    }
                });
            }
            Err(_) => {
                tracing::warn!(key = %self.key, "no Tokio runtime to release on; the lock frees at its TTL");
            }
        }
    }
}
