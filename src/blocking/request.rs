//! [`LockRequest`], a hold being asked for, and [`Semaphore`], a counting
//! semaphore: the blocking twins of [`crate::LockRequest`] and
//! [`crate::Semaphore`].

use std::future::IntoFuture;
use std::time::Duration;

use super::{LockGuard, Locker};
use crate::{Inspection, OwnerId, Result};

/// What a request asks for.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    /// A lock, or the write hold of a read-write lock.
    Exclusive,
    /// The read hold of a read-write lock.
    Shared,
    /// A permit of a semaphore of this many.
    Permit(u32),
}

/// How long a request may wait.
#[derive(Debug, Clone, Copy)]
enum WaitSpec {
    NoWait,
    AtMost(Duration),
    Forever,
}

/// A request for a hold, being built: [`acquire`](LockRequest::acquire) takes it,
/// blocking the thread. Made by [`Locker::lock_request`],
/// [`Locker::read_lock_request`], [`Locker::write_lock_request`] and
/// [`Semaphore::acquire_request`]; the same settings as [`crate::LockRequest`].
#[must_use = "a lock request does nothing until it is acquired"]
#[derive(Debug)]
pub struct LockRequest<'a> {
    locker: &'a Locker,
    key: String,
    kind: Kind,
    /// The lease asked for, and whether it is fixed (no watchdog).
    lease: Option<(Duration, bool)>,
    wait: WaitSpec,
    owner: Option<OwnerId>,
    fair: bool,
}

impl<'a> LockRequest<'a> {
    pub(super) fn new(locker: &'a Locker, key: String, kind: Kind) -> Self {
        Self {
            locker,
            key,
            kind,
            lease: None,
            wait: WaitSpec::Forever,
            owner: None,
            fair: false,
        }
    }

    /// The lease the watchdog keeps renewing every `ttl / 3` while the guard
    /// lives (default: the locker's, [`Locker::with_ttl`]).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.lease = Some((ttl, false));
        self
    }

    /// A fixed lease: no watchdog; the hold expires `lease` after it was
    /// requested unless [`LockGuard::extend`] pushes it out.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = Some((lease, true));
        self
    }

    /// Waits at most `wait`, then fails with [`crate::LockError::Timeout`].
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = WaitSpec::AtMost(wait);
        self
    }

    /// Waits as long as it takes (the default).
    pub fn wait_forever(mut self) -> Self {
        self.wait = WaitSpec::Forever;
        self
    }

    /// Does not wait: fails with [`crate::LockError::Contended`] if the hold
    /// cannot be granted at once.
    pub fn no_wait(mut self) -> Self {
        self.wait = WaitSpec::NoWait;
        self
    }

    /// Waits in arrival order, as [`crate::LockRequest::fair`] does.
    pub fn fair(mut self) -> Self {
        self.fair = true;
        self
    }

    /// Acquires as `owner`: acquiring again with the same owner is reentrant.
    pub fn owner(mut self, owner: OwnerId) -> Self {
        self.owner = Some(owner);
        self
    }

    /// Takes the hold, blocking the thread for as long as the request may wait.
    ///
    /// # Errors
    ///
    /// As awaiting a [`crate::LockRequest`]: [`crate::LockError::Timeout`] when a
    /// bounded wait runs out, [`crate::LockError::Contended`] under
    /// [`no_wait`](Self::no_wait); [`crate::LockError::Config`] from inside an
    /// async runtime.
    pub fn acquire(self) -> Result<LockGuard> {
        let locker = self.locker.as_async();
        let semaphore;
        let mut request = match self.kind {
            Kind::Exclusive => locker.lock(self.key),
            Kind::Shared => locker.read_lock(self.key),
            Kind::Permit(limit) => {
                semaphore = locker.semaphore(self.key, limit);
                semaphore.acquire()
            }
        };
        request = match (self.lease, self.locker.ttl()) {
            (Some((lease, true)), _) => request.lease(lease),
            (Some((ttl, false)), _) | (None, Some(ttl)) => request.ttl(ttl),
            (None, None) => request,
        };
        request = match self.wait {
            WaitSpec::NoWait => request.no_wait(),
            WaitSpec::AtMost(wait) => request.wait(wait),
            WaitSpec::Forever => request.wait_forever(),
        };
        if let Some(owner) = self.owner {
            request = request.owner(owner);
        }
        if self.fair {
            request = request.fair();
        }
        let acquired = self.locker.runtime().call(request.into_future())?;
        Ok(LockGuard::new(acquired, self.locker.runtime().clone()))
    }
}

/// A counting semaphore: at most [`limit`](Semaphore::limit) permits of
/// [`key`](Semaphore::key) are held at once, as [`crate::Semaphore`]. Made by
/// [`Locker::semaphore`]; cheap to clone.
#[derive(Debug, Clone)]
pub struct Semaphore {
    locker: Locker,
    key: String,
    limit: u32,
}

impl Semaphore {
    pub(super) fn new(locker: Locker, key: String, limit: u32) -> Self {
        Self { locker, key, limit }
    }

    /// The semaphore's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// How many permits it has.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// A request for one permit, to set a wait or a lease on.
    pub fn acquire_request(&self) -> LockRequest<'_> {
        LockRequest::new(&self.locker, self.key.clone(), Kind::Permit(self.limit))
    }

    /// Takes a permit, waiting as long as it takes.
    ///
    /// # Errors
    ///
    /// As [`crate::Semaphore::acquire`].
    pub fn acquire(&self) -> Result<LockGuard> {
        self.acquire_request().acquire()
    }

    /// Takes a permit if one is free right now.
    ///
    /// # Errors
    ///
    /// [`crate::LockError::Contended`] when all are out; as
    /// [`crate::Semaphore::try_acquire`].
    pub fn try_acquire(&self) -> Result<LockGuard> {
        self.acquire_request().no_wait().acquire()
    }

    /// The permits held and the waiters.
    ///
    /// # Errors
    ///
    /// As [`crate::Semaphore::inspect`].
    pub fn inspect(&self) -> Result<Inspection> {
        self.locker.inspect(self.key.as_str())
    }

    /// How many permits are free right now (a moment later it may differ).
    ///
    /// # Errors
    ///
    /// As [`crate::Semaphore::available`].
    pub fn available(&self) -> Result<u32> {
        let semaphore = self.locker.as_async().semaphore(&self.key, self.limit);
        self.locker.runtime().call(semaphore.available())
    }
}
