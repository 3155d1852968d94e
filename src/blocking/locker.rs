//! [`Locker`]: the blocking client, each call waiting on the calling thread.

use std::sync::Arc;
use std::time::Duration;

use super::request::Kind;
use super::{Election, Job, LockGuard, LockRequest, OwnRuntime, Semaphore};
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

    pub(super) fn runtime(&self) -> &Arc<OwnRuntime> {
        &self.runtime
    }

    /// The watchdog lease set by [`with_ttl`](Self::with_ttl).
    pub(super) fn ttl(&self) -> Option<Duration> {
        self.ttl
    }

    /// Takes every later hold (and leadership) with the watchdog lease `ttl`
    /// (renewed every `ttl / 3`) instead of [`crate::DEFAULT_WATCHDOG_TTL`].
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
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
        self.lock_request(key).acquire()
    }

    /// Takes the lock `key`, waiting at most `wait`.
    ///
    /// # Errors
    ///
    /// [`crate::LockError::Timeout`] if it stayed held for `wait`; as
    /// [`lock`](Self::lock).
    pub fn lock_within(&self, key: impl Into<String>, wait: Duration) -> Result<LockGuard> {
        self.lock_request(key).wait(wait).acquire()
    }

    /// Takes the lock `key` if it is free, without waiting.
    ///
    /// # Errors
    ///
    /// [`crate::LockError::Contended`] if it is held.
    pub fn try_lock(&self, key: impl Into<String>) -> Result<LockGuard> {
        self.lock_request(key).no_wait().acquire()
    }

    /// A request for the lock `key`, as [`crate::Locker::lock`] returns one.
    pub fn lock_request(&self, key: impl Into<String>) -> LockRequest<'_> {
        LockRequest::new(self, key.into(), Kind::Exclusive)
    }

    /// A read (shared) hold of `key`, waiting as long as it takes.
    ///
    /// # Errors
    ///
    /// As [`crate::Locker::read_lock`].
    pub fn read_lock(&self, key: impl Into<String>) -> Result<LockGuard> {
        self.read_lock_request(key).acquire()
    }

    /// A read (shared) hold of `key`, waiting at most `wait` for writers.
    ///
    /// # Errors
    ///
    /// [`crate::LockError::Timeout`] if a writer held it for `wait`; as
    /// [`read_lock`](Self::read_lock).
    pub fn read_lock_within(&self, key: impl Into<String>, wait: Duration) -> Result<LockGuard> {
        self.read_lock_request(key).wait(wait).acquire()
    }

    /// A request for a read hold of `key`, as [`crate::Locker::read_lock`]
    /// returns one.
    pub fn read_lock_request(&self, key: impl Into<String>) -> LockRequest<'_> {
        LockRequest::new(self, key.into(), Kind::Shared)
    }

    /// A write (exclusive) hold of `key`, waiting as long as it takes.
    ///
    /// # Errors
    ///
    /// As [`crate::Locker::write_lock`].
    pub fn write_lock(&self, key: impl Into<String>) -> Result<LockGuard> {
        self.write_lock_request(key).acquire()
    }

    /// A write (exclusive) hold of `key`, waiting at most `wait` for the readers
    /// and the writer.
    ///
    /// # Errors
    ///
    /// [`crate::LockError::Timeout`] if it stayed held for `wait`; as
    /// [`write_lock`](Self::write_lock).
    pub fn write_lock_within(&self, key: impl Into<String>, wait: Duration) -> Result<LockGuard> {
        self.write_lock_request(key).wait(wait).acquire()
    }

    /// A request for the write hold of `key`, as [`crate::Locker::write_lock`]
    /// returns one. The write hold of a key is its lock.
    pub fn write_lock_request(&self, key: impl Into<String>) -> LockRequest<'_> {
        LockRequest::new(self, key.into(), Kind::Exclusive)
    }

    /// The counting semaphore `key` of `limit` permits, as
    /// [`crate::Locker::semaphore`].
    pub fn semaphore(&self, key: impl Into<String>, limit: u32) -> Semaphore {
        Semaphore::new(self.clone(), key.into(), limit)
    }

    /// One permit of the semaphore `key` of `limit` permits, waiting at most
    /// `wait`.
    ///
    /// # Errors
    ///
    /// [`crate::LockError::Timeout`] if every permit stayed out for `wait`; as
    /// [`crate::Semaphore::acquire`].
    pub fn permit(&self, key: impl Into<String>, limit: u32, wait: Duration) -> Result<LockGuard> {
        self.semaphore(key, limit)
            .acquire_request()
            .wait(wait)
            .acquire()
    }

    /// One permit of the semaphore `key` of `limit` permits if one is free right
    /// now.
    ///
    /// # Errors
    ///
    /// [`crate::LockError::Contended`] when all are out; as
    /// [`crate::Semaphore::try_acquire`].
    pub fn try_permit(&self, key: impl Into<String>, limit: u32) -> Result<LockGuard> {
        self.semaphore(key, limit).try_acquire()
    }

    /// Who holds `key` and who waits.
    ///
    /// # Errors
    ///
    /// As [`crate::Locker::inspect`].
    pub fn inspect(&self, key: impl Into<String>) -> Result<Inspection> {
        self.runtime.call(self.locker.inspect(key))
    }

    /// An election on `name`, as [`crate::Locker::election`]; its leader's lease
    /// is this locker's [`with_ttl`](Self::with_ttl) unless
    /// [`Election::ttl`] sets one.
    pub fn election(&self, name: impl Into<String>) -> Election {
        let election = self.locker.election(name);
        let election = match self.ttl {
            Some(ttl) => election.ttl(ttl),
            None => election,
        };
        Election::new(election, self.runtime.clone())
    }

    /// A scheduled job named `name` that runs on one node of many, as
    /// [`crate::Locker::job`].
    pub fn job(&self, name: impl Into<String>) -> Job {
        Job::new(self.locker.job(name), self.runtime.clone())
    }
}
