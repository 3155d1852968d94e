//! [`LockGuard`]: a hold of the blocking API, released when dropped.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::OwnRuntime;
use crate::{FencingToken, LockKey, LockMode, OwnerId, Result};

/// A held lock of the blocking API: released when dropped.
#[must_use = "if unused the lock is released immediately"]
#[derive(Debug)]
pub struct LockGuard {
    guard: Option<crate::LockGuard>,
    runtime: Arc<OwnRuntime>,
}

impl LockGuard {
    pub(super) fn new(guard: crate::LockGuard, runtime: Arc<OwnRuntime>) -> Self {
        Self {
            guard: Some(guard),
            runtime,
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
