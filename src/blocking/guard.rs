//! [`LockGuard`]: a hold of the blocking API, released when dropped, and the
//! lost signal as a thread waits for it.

use std::future::Future;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::OwnRuntime;
use crate::{FencingToken, LockKey, LockMode, LostReason, OwnerId, Result};

/// A held lock of the blocking API: released when dropped.
#[must_use = "if unused the lock is released immediately"]
#[derive(Debug)]
pub struct LockGuard {
    guard: Option<crate::LockGuard>,
    runtime: Arc<OwnRuntime>,
    watch: LostWatch,
}

impl LockGuard {
    pub(super) fn new(guard: crate::LockGuard, runtime: Arc<OwnRuntime>) -> Self {
        Self {
            guard: Some(guard),
            runtime,
            watch: LostWatch::new(),
        }
    }

    fn inner(&self) -> &crate::LockGuard {
        #[allow(clippy::expect_used)]
        // BUG: `guard` is only taken by `release` and `drop`, which consume it.
        self.guard.as_ref().expect("BUG: guard used after release")
    }

    /// The lock's key.
    pub fn key(&self) -> &LockKey {
        self.inner().key()
    }

    /// The owner this hold belongs to; pass it to [`super::LockRequest::owner`]
    /// to re-enter.
    pub fn owner(&self) -> &OwnerId {
        self.inner().owner()
    }

    /// The fencing token: send it with every write to the protected resource.
    pub fn token(&self) -> FencingToken {
        self.inner().token()
    }

    /// What the hold excludes.
    pub fn mode(&self) -> LockMode {
        self.inner().mode()
    }

    /// Whether the hold is known to be lost; stop writing when it is.
    pub fn is_lost(&self) -> bool {
        self.inner().is_lost()
    }

    /// Blocks until the hold is lost (a renewal was refused, the backend session
    /// ended, or the lease deadline passed) or `timeout` passes: the reason, or
    /// `None` if the hold was still good when the time ran out. Returns at once
    /// for a hold already lost.
    ///
    /// # Errors
    ///
    /// [`crate::LockError::Config`] from inside an async runtime.
    pub fn wait_lost(&self, timeout: Duration) -> Result<Option<LostReason>> {
        self.runtime.block_on_within(timeout, self.inner().lost())
    }

    /// The lost signal as a channel: the receiver gets the reason once, when the
    /// hold is lost, and is disconnected once the guard is released or dropped
    /// without a loss. Wait on it with `recv`, `recv_timeout` or `try_recv`, from
    /// any thread; it does not block here.
    pub fn lost(&self) -> mpsc::Receiver<LostReason> {
        self.watch.receiver(&self.runtime, self.inner().lost())
    }

    /// When the lease ends unless renewed, on the monotonic clock.
    pub fn deadline(&self) -> Instant {
        self.inner().deadline().into_std()
    }

    /// Pushes the lease out to `ttl` from now.
    ///
    /// # Errors
    ///
    /// As [`crate::LockGuard::extend`].
    pub fn extend(&self, ttl: Duration) -> Result<()> {
        self.runtime.call(self.inner().extend(ttl))
    }

    /// Releases the lock and says whether the backend still had it.
    ///
    /// # Errors
    ///
    /// As [`crate::LockGuard::release`]; [`crate::LockError::Config`] from
    /// inside an async runtime, the release then going on in the background.
    pub fn release(mut self) -> Result<()> {
        match self.guard.take() {
            Some(guard) => self.runtime.release(guard),
            None => Ok(()),
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if let Some(guard) = self.guard.take() {
            self.runtime.release_on_drop(guard);
        }
    }
}

/// Ends the tasks behind a guard's [`LockGuard::lost`] receivers when the guard
/// goes: nothing is sent on the watch, and dropping it disconnects them.
#[derive(Debug)]
pub(super) struct LostWatch(watch::Sender<()>);

impl LostWatch {
    pub(super) fn new() -> Self {
        Self(watch::Sender::new(()))
    }

    /// A receiver of what `lost` resolves with, until this watch is dropped.
    pub(super) fn receiver(
        &self,
        runtime: &OwnRuntime,
        lost: impl Future<Output = LostReason> + Send + 'static,
    ) -> mpsc::Receiver<LostReason> {
        let (tx, rx) = mpsc::channel();
        let mut gone = self.0.subscribe();
        // On a shut-down runtime the task is never spawned: `tx` is dropped and
        // the receiver disconnected, as for a released guard.
        let _ = runtime.spawn(async move {
            tokio::select! {
                biased;
                reason = lost => {
                    let _ = tx.send(reason);
                }
                _ = gone.changed() => {}
            }
        });
        rx
    }
}
