//! [`LockGuard`]: proof of a hold, with its token, lost signal and release.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::hold::{Hold, LostReason};
use super::locker::Inner;
use super::lost::lost_future;
use super::release::{Release, Released};
use crate::error::{LockError, Result};
use crate::types::{FencingToken, LockKey, OwnerId, validate_ttl};

/// A held lock.
///
/// Release it with [`release`](LockGuard::release) to learn whether the release
/// succeeded. Dropping the guard also releases, but in the background and without a
/// result: the lock stays held for the round trip it takes (or until its TTL if the
/// runtime is shutting down).
#[must_use = "if unused the lock is released immediately"]
#[clippy::has_significant_drop]
pub struct LockGuard {
    hold: Option<Arc<Hold>>,
    inner: Arc<Inner>,
}

impl fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("LockGuard");
        if let Some(hold) = &self.hold {
            d.field("key", &hold.key)
                .field("token", &hold.token)
                .field("owner", &hold.owner);
        }
        d.finish_non_exhaustive()
    }
}

impl LockGuard {
    pub(crate) fn new(hold: Arc<Hold>, inner: Arc<Inner>) -> Self {
        Self {
            hold: Some(hold),
            inner,
        }
    }

    fn hold(&self) -> &Arc<Hold> {
        #[allow(clippy::expect_used)]
        // BUG: `hold` is only taken by `release` and `drop`, which consume the guard.
        self.hold.as_ref().expect("BUG: guard used after release")
    }

    /// The lock's key.
    pub fn key(&self) -> &LockKey {
        &self.hold().key
    }

    /// The owner this hold belongs to; pass it to [`crate::LockRequest::owner`] to
    /// re-enter.
    pub fn owner(&self) -> &OwnerId {
        &self.hold().owner
    }

    /// The fencing token: send it with every write to the protected resource.
    pub fn token(&self) -> FencingToken {
        self.hold().token
    }

    /// What the hold excludes: exclusive ([`crate::Locker::lock`],
    /// [`crate::Locker::write_lock`]), shared ([`crate::Locker::read_lock`]), or a
    /// semaphore permit ([`crate::Semaphore::acquire`]).
    pub fn mode(&self) -> crate::LockMode {
        self.hold().mode
    }

    /// The lease the backend applies to this hold: how long it keeps the lock
    /// after the last renewal if this process vanishes. That is the TTL asked for,
    /// unless the backend raised it (etcd grants no lease under 1.5 × its election
    /// timeout, 2 s with default flags, and only whole seconds). Holds bound to a
    /// session last as long as the session: on ZooKeeper this is how long the
    /// ensemble may keep a session whose client stopped (its timeout plus a server
    /// tick), on Consul the session's invalidation (up to twice its TTL) plus the
    /// lock-delay. The SQL session modes end with the connection, so there it is
    /// the TTL asked for, which only the client checks.
    pub fn effective_ttl(&self) -> Duration {
        self.hold().effective_ttl
    }

    /// How many guards share this hold (reentrancy count).
    pub fn hold_count(&self) -> usize {
        self.hold().count()
    }

    /// When the current lease ends unless renewed, on the monotonic clock.
    pub fn deadline(&self) -> Instant {
        self.hold().deadline()
    }

    /// Whether the hold is known to be lost (or its deadline has passed).
    pub fn is_lost(&self) -> bool {
        !self.hold().is_live()
    }

    /// Resolves when the lock can no longer be trusted: a renewal was refused, the
    /// backend session ended, or the lease deadline passed. Stop writing to the
    /// protected resource when it fires.
    ///
    /// The future is independent of the guard (`'static`), so it can be raced
    /// against the critical section with `tokio::select!`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// use lockkit::{Locker, mem::MemDriver}; // `mem`: the `mem` feature
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), lockkit::LockError> {
    /// let locker = Locker::new(Arc::new(MemDriver::new()));
    /// let guard = locker.lock("job").lease(Duration::from_millis(50)).await?;
    /// // A fixed lease with no extend: the lost signal fires at the deadline.
    /// let reason = guard.lost().await;
    /// println!("lost: {reason}");
    /// # Ok(()) }
    /// ```
    pub fn lost(&self) -> impl Future<Output = LostReason> + Send + 'static {
        lost_future(self.hold())
    }

    /// Pushes the lease out to `ttl` from now.
    ///
    /// # Errors
    ///
    /// [`LockError::Lost`] if the hold is gone or its deadline already passed
    /// (an expired hold is never revived), [`LockError::InvalidTtl`], or a backend
    /// error.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a dropped extend leaves the old or the new deadline in place; the
    /// guard keeps the old one, which is never later than the backend's.
    pub async fn extend(&self, ttl: Duration) -> Result<()> {
        let ttl = validate_ttl(ttl)?;
        let hold = self.hold();
        if let Some(reason) = hold.lost_reason() {
            return Err(LockError::lost(&hold.key, reason.to_string()));
        }
        let sent_at = Instant::now();
        let extended = self.inner.driver.extend(&hold.key, &hold.owner, ttl).await;
        hold.meter.labels.renewal(extended.is_ok());
        match extended {
            Ok(deadline) => {
                hold.renewed(deadline, sent_at);
                Ok(())
            }
            Err(e) => {
                if e.is_lost() {
                    hold.mark_lost(LostReason::Gone);
                }
                Err(e)
            }
        }
    }

    /// Replaces the text stored with the hold (label and election value), keeping
    /// its token and lease: [`crate::Leadership::proclaim`].
    pub(super) async fn proclaim(&self, text: &str) -> Result<()> {
        let hold = self.hold();
        if let Some(reason) = hold.lost_reason() {
            return Err(LockError::lost(&hold.key, reason.to_string()));
        }
        match self
            .inner
            .driver
            .proclaim(&hold.key, &hold.owner, text)
            .await
        {
            Err(e) if e.is_lost() => {
                hold.mark_lost(LostReason::Gone);
                Err(e)
            }
            other => other,
        }
    }

    /// Gives the guard up without releasing: the hold lasts until its lease ends
    /// on the backend (a job's `at_least_for`, [`crate::Job`]). Nothing renews it.
    pub(crate) fn keep_until_deadline(mut self) {
        if let Some(hold) = self.hold.take()
            && hold.leave()
        {
            self.inner.forget(&hold);
        }
    }

    /// What releasing `hold` takes: tried until its lease ends.
    fn release_of(&self, hold: &Hold) -> Release {
        Release::new(
            self.inner.releases.begin(&hold.key, &hold.owner),
            self.inner.driver.clone(),
            (hold.key.clone(), hold.owner.clone()),
            hold.deadline(),
        )
    }

    /// Releases this guard's share of the hold; the backend lock is released when the
    /// last reentrant guard is. A release that fails (a backend error, a broken
    /// connection) is sent again after a pause, until it succeeds or the hold's
    /// lease ends.
    ///
    /// # Errors
    ///
    /// [`LockError::Lost`] if the backend no longer had our hold (it expired or was
    /// taken over: the critical section may have overlapped with another holder's),
    /// [`LockError::ReleaseFailed`] if every attempt failed until the lease ended,
    /// or an error that retrying cannot mend. Either way, the guard is gone.
    ///
    /// # Cancel safety
    ///
    /// If the future is dropped, the release continues in the background, tried
    /// again after failures as here.
    pub async fn release(mut self) -> Result<()> {
        let Some(hold) = self.hold.take() else {
            return Ok(());
        };
        if !hold.leave() {
            return Ok(());
        }
        // Under way before the hold is forgotten: an acquire by the same owner
        // finds one or the other, and waits for the release.
        let release = self.release_of(&hold);
        self.inner.forget(&hold);
        let mut background = BackgroundRelease(Some(release.clone()));
        let result = release.run().await;
        background.0 = None;
        match result {
            Ok(Released::Freed) => {
                tracing::debug!(key = %hold.key, token = hold.token.get(), "released");
                Ok(())
            }
            Ok(Released::NotHeld { after_failures }) => {
                hold.meter.lost();
                Err(LockError::lost(
                    &hold.key,
                    if after_failures {
                        "the backend no longer held it when a release tried again: a failed \
                         attempt before may have freed it, or the lease had expired or the \
                         hold was removed"
                    } else {
                        "the backend no longer held it at release; the lease had expired or \
                         the hold was removed"
                    },
                ))
            }
            Err(e) => Err(e),
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let Some(hold) = self.hold.take() else {
            return;
        };
        if hold.leave() {
            let release = self.release_of(&hold);
            self.inner.forget(&hold);
            release.in_background();
        }
    }
}

/// A release under way: finished in the background if its future is dropped.
struct BackgroundRelease(Option<Release>);

impl Drop for BackgroundRelease {
    fn drop(&mut self) {
        if let Some(release) = self.0.take() {
            release.in_background();
        }
    }
}
