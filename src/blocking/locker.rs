//! [`Locker`]: the blocking client, each call waiting on the calling thread.

use std::future::{Future, IntoFuture};
use std::sync::Arc;
use std::time::Duration;

use super::{LockGuard, OwnRuntime};
use crate::{Inspection, Result};

/// A blocking lock client: [`crate::Locker`]'s operations, each waiting on the
/// calling thread. Cheap to clone; clones share the connection and the runtime.
#[derive(Debug, Clone)]
pub struct Locker {
    locker: crate::Locker,
    runtime: Arc<OwnRuntime>,
    /// The watchdog lease of every hold taken, if not the default.
    ttl: Option<Duration>,
}

impl Locker {
    pub(super) fn new(locker: crate::Locker, runtime: OwnRuntime) -> Self {
        Self {
            locker,
            runtime: Arc::new(runtime),
            ttl: None,
        }
    }

    /// Takes every later hold with the watchdog lease `ttl` (renewed every
    /// `ttl / 3`) instead of [`crate::DEFAULT_WATCHDOG_TTL`].
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// `request` with this locker's lease, run to its end.
    fn take(&self, request: crate::LockRequest<'_>) -> Result<LockGuard> {
        let request = match self.ttl {
            Some(ttl) => request.ttl(ttl),
            None => request,
        };
        self.guard(self.run(request.into_future()))
    }

    /// Runs `f` on the runtime, from a thread outside any runtime.
    fn run<T>(&self, f: impl Future<Output = Result<T>>) -> Result<T> {
        self.runtime.block_on(f)
    }

    fn guard(&self, acquired: Result<crate::LockGuard>) -> Result<LockGuard> {
        acquired.map(|guard| LockGuard::new(guard, self.runtime.clone()))
    }

    /// The async locker underneath (its futures must run on a runtime).
    pub fn as_async(&self) -> &crate::Locker {
        &self.locker
    }

    /// Takes the lock `key`, waiting as long as it takes; the watchdog renews it
    /// while the guard lives.
    ///
    /// # Errors
    ///
    /// As [`crate::Locker::lock`].
    pub fn lock(&self, key: impl Into<String>) -> Result<LockGuard> {
        self.take(self.locker.lock(key))
    }

    /// Takes the lock `key`, waiting at most `wait`.
    ///
    /// # Errors
    ///
    /// [`LockError::Timeout`] if it stayed held for `wait`; as [`lock`](Self::lock).
    pub fn lock_within(&self, key: impl Into<String>, wait: Duration) -> Result<LockGuard> {
        self.take(self.locker.lock(key).wait(wait))
    }

    /// Takes the lock `key` if it is free, without waiting.
    ///
    /// # Errors
    ///
    /// [`LockError::Contended`] if it is held.
    pub fn try_lock(&self, key: impl Into<String>) -> Result<LockGuard> {
        self.take(self.locker.lock(key).no_wait())
    }

    /// A read (shared) hold of `key`, waiting as long as it takes.
    ///
    /// # Errors
    ///
    /// As [`crate::Locker::read_lock`].
    pub fn read_lock(&self, key: impl Into<String>) -> Result<LockGuard> {
        self.take(self.locker.read_lock(key))
    }

    /// A write (exclusive) hold of `key`, waiting as long as it takes.
    ///
    /// # Errors
    ///
    /// As [`crate::Locker::write_lock`].
    pub fn write_lock(&self, key: impl Into<String>) -> Result<LockGuard> {
        self.take(self.locker.write_lock(key))
    }

    /// One permit of the semaphore `key` of `limit` permits, waiting at most
    /// `wait`.
    ///
    /// # Errors
    ///
    /// As [`crate::Semaphore::acquire`].
    pub fn permit(&self, key: impl Into<String>, limit: u32, wait: Duration) -> Result<LockGuard> {
        let semaphore = self.locker.semaphore(key, limit);
        self.take(semaphore.acquire().wait(wait))
    }

    /// Who holds `key` and who waits.
    ///
    /// # Errors
    ///
    /// As [`crate::Locker::inspect`].
    pub fn inspect(&self, key: impl Into<String>) -> Result<Inspection> {
        self.run(self.locker.inspect(key))
    }
}
