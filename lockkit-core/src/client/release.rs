//! Giving a hold back: a release that fails is tried again, until it succeeds or
//! the hold's lease ends, so that a backend error never leaves a lock held in
//! silence. While it is under way, an acquire by the same owner through the same
//! [`crate::Locker`] waits for it: the backend would take that acquire for the
//! hold being released, and a later try of the release would free it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::driver::{LockDriver, Wait};
use crate::error::{LockError, Result};
use crate::sync::lock;
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

/// What a release came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Released {
    /// The backend had the hold, and freed it.
    Freed,
    /// The backend no longer had it. `after_failures`: an earlier attempt
    /// failed, and may have freed it before its answer was lost.
    NotHeld { after_failures: bool },
}

/// One Locker's releases under way, by key and owner.
#[derive(Debug, Default)]
pub(crate) struct InFlight(Mutex<HashMap<(LockKey, u128), watch::Receiver<bool>>>);

impl InFlight {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<(LockKey, u128), watch::Receiver<bool>>> {
        lock(&self.0)
    }

    /// Marks a release of `key` by `owner` under way until the returned mark
    /// is dropped (with every clone of the [`Release`] that holds it).
    pub(crate) fn begin(self: &Arc<Self>, key: &LockKey, owner: &OwnerId) -> Arc<UnderWay> {
        let (done, waiters) = watch::channel(false);
        let id = (key.clone(), owner.as_u128());
        self.map().insert(id.clone(), waiters.clone());
        Arc::new(UnderWay {
            in_flight: self.clone(),
            id,
            done,
            mine: waiters,
        })
    }

    /// Waits, as `wait` allows, for a release of `key` by `owner` under way to
    /// end.
    ///
    /// # Errors
    ///
    /// [`LockError::Contended`] for a request that does not wait, and
    /// [`LockError::Timeout`] when its wait ends first: the owner's hold is
    /// still being released.
    pub(crate) async fn wait_for(&self, key: &LockKey, owner: &OwnerId, wait: &Wait) -> Result<()> {
        let Some(mut ended) = self.map().get(&(key.clone(), owner.as_u128())).cloned() else {
            return Ok(());
        };
        let started = Instant::now();
        let ending = ended.wait_for(|done| *done);
        let waited = match wait {
            Wait::NoWait => None,
            Wait::Until(deadline) => tokio::time::timeout_at(*deadline, ending).await.ok(),
            Wait::Forever => Some(ending.await),
        };
        match waited {
            // Ended, or its sender gone: either way it is no longer under way.
            Some(_) => Ok(()),
            None if matches!(wait, Wait::NoWait) => Err(LockError::Contended {
                key: key.to_string(),
            }),
            None => Err(LockError::Timeout {
                key: key.to_string(),
                waited: started.elapsed(),
            }),
        }
    }
}

/// A release under way; dropped, it is no longer.
#[derive(Debug)]
pub(crate) struct UnderWay {
    in_flight: Arc<InFlight>,
    id: (LockKey, u128),
    done: watch::Sender<bool>,
    /// To tell this mark's entry from a later one of the same key and owner.
    mine: watch::Receiver<bool>,
}

impl Drop for UnderWay {
    fn drop(&mut self) {
        let mut map = self.in_flight.map();
        if map
            .get(&self.id)
            .is_some_and(|r| r.same_channel(&self.mine))
        {
            map.remove(&self.id);
        }
        drop(map);
        let _ = self.done.send(true);
    }
}

/// One hold to release: whose, and until when trying again makes sense.
#[derive(Debug, Clone)]
pub(crate) struct Release {
    driver: Arc<dyn LockDriver>,
    key: LockKey,
    owner: OwnerId,
    /// When the hold's lease ends on the backend unless renewed (nothing renews
    /// it once its release has begun).
    deadline: Instant,
    _under_way: Arc<UnderWay>,
}

impl Release {
    /// The release of `owner`'s hold of `key`, whose lease ends at `deadline`;
    /// `under_way` marks it so ([`InFlight::begin`]) until it and its clones
    /// are dropped.
    pub(crate) fn new(
        under_way: Arc<UnderWay>,
        driver: Arc<dyn LockDriver>,
        (key, owner): (LockKey, OwnerId),
        deadline: Instant,
    ) -> Self {
        Self {
            _under_way: under_way,
            driver,
            key,
            owner,
            deadline,
        }
    }

    /// Releases. An attempt that fails is made again after a pause, for as
    /// long as the lease lasts.
    ///
    /// # Errors
    ///
    /// [`LockError::ReleaseFailed`] once the lease has ended with every attempt
    /// failed; an error that retrying cannot mend (a refused capability, a bad
    /// setting) at once.
    pub(crate) async fn run(&self) -> Result<Released> {
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
                Ok(freed) => {
                    if attempts > 1 {
                        tracing::warn!(key = %self.key, attempt = attempts, freed, "a release went through on a later try");
                    }
                    return Ok(if freed {
                        Released::Freed
                    } else {
                        Released::NotHeld {
                            after_failures: attempts > 1,
                        }
                    });
                }
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
