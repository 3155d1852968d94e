//! What a case can see of the backend without taking part: who holds a key and
//! how many wait for it. Cases wait for a state ("a waiter is queued") instead of
//! sleeping and hoping.

use std::time::Duration;

use lockkit_core::{Inspect, Inspection, LockKey};
use tokio::time::{Instant, sleep};

use crate::check::{CaseError, CaseResult};
use crate::harness::Ctx;

/// How often a wait for a backend state looks again.
pub(crate) const LOOK_EVERY: Duration = Duration::from_millis(2);

impl Ctx {
    /// Who holds `key` and how many wait, by the backend ([`lockkit_core::LockDriver::inspect`]).
    ///
    /// # Errors
    ///
    /// [`CaseError::Skipped`] on a driver without inspection; a failure when the
    /// backend does not answer.
    pub async fn inspect(&self, key: &str) -> Result<Inspection, CaseError> {
        if self.caps.inspect == Inspect::No {
            return Err(CaseError::Skipped("the driver has no inspection".into()));
        }
        let driver = self
            .inspector
            .get_or_try_init(|| self.harness.driver())
            .await?;
        Ok(driver.inspect(&LockKey::new(key)?).await?)
    }

    /// Whether the backend reports how many acquires wait for a key.
    pub fn counts_waiters(&self) -> bool {
        self.caps.inspect == Inspect::HoldersAndWaiters
    }

    /// Waits (at most `limit`) until the backend shows `n` acquires queued on
    /// `key`; does nothing on a backend that does not count its waiters.
    ///
    /// # Errors
    ///
    /// A failure naming the count last seen when `limit` passes first.
    pub async fn until_queued(&self, key: &str, n: usize, limit: Duration) -> CaseResult {
        if !self.counts_waiters() {
            return Ok(());
        }
        let give_up = Instant::now() + limit;
        loop {
            let seen = self.inspect(key).await?.waiters;
            if seen == Some(n) {
                return Ok(());
            }
            if Instant::now() >= give_up {
                return Err(CaseError::Failed(format!(
                    "expected {n} waiter(s) queued on `{key}` within {}, the backend shows {seen:?}",
                    lockkit_core::human_duration(limit)
                )));
            }
            sleep(LOOK_EVERY).await;
        }
    }
}
