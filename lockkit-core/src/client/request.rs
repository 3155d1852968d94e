//! [`LockRequest`]: a hold being asked for, built then awaited.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::time::Duration;

use super::guard::LockGuard;
use super::locker::Locker;
use crate::driver::{LockMode, Wait};
use crate::error::Result;
use crate::types::OwnerId;

/// How long a request may wait, as the caller said it.
#[derive(Debug, Clone, Copy)]
pub(super) enum WaitSpec {
    NoWait,
    AtMost(Duration),
    Forever,
}

impl WaitSpec {
    /// The driver's [`Wait`], counted from now.
    pub(super) fn start(self) -> Wait {
        match self {
            WaitSpec::NoWait => Wait::NoWait,
            WaitSpec::Forever => Wait::Forever,
            WaitSpec::AtMost(d) => Wait::at_most(d),
        }
    }
}

/// A request for a hold — a lock, a read or write hold, a semaphore permit —
/// being built; `.await` it to acquire.
///
/// # Cancel safety
///
/// Dropping the future before it completes leaves no hold behind: anything the backend
/// granted in the meantime is released in the background.
#[must_use = "a lock request does nothing until it is awaited"]
#[derive(Debug)]
pub struct LockRequest<'a> {
    pub(super) locker: &'a Locker,
    pub(super) key: String,
    pub(super) ttl: Option<Duration>,
    pub(super) fixed: bool,
    pub(super) wait: WaitSpec,
    pub(super) owner: Option<OwnerId>,
    pub(super) mode: LockMode,
    /// What an election's candidate stores with its hold.
    pub(super) value: Option<String>,
    pub(super) fair: bool,
}

impl<'a> LockRequest<'a> {
    pub(super) fn new(locker: &'a Locker, key: String, mode: LockMode) -> Self {
        Self {
            locker,
            key,
            ttl: None,
            fixed: false,
            wait: WaitSpec::Forever,
            owner: None,
            mode,
            value: None,
            fair: false,
        }
    }

    /// The lease the watchdog keeps renewing every `ttl / 3` while the guard lives.
    /// If the process stalls or dies, the hold is free at most `ttl` later.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self.fixed = false;
        self
    }

    /// A fixed lease: no watchdog; the hold expires `lease` after it was requested
    /// unless [`LockGuard::extend`] pushes it out.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.ttl = Some(lease);
        self.fixed = true;
        self
    }

    /// Waits at most `wait` for a held lock, then fails with
    /// [`crate::LockError::Timeout`].
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = WaitSpec::AtMost(wait);
        self
    }

    /// Waits as long as it takes (the default).
    pub fn wait_forever(mut self) -> Self {
        self.wait = WaitSpec::Forever;
        self
    }

    /// Does not wait: fails with [`crate::LockError::Contended`] if the hold cannot
    /// be granted at once.
    pub fn no_wait(mut self) -> Self {
        self.wait = WaitSpec::NoWait;
        self
    }

    /// Waits in arrival order, as Redisson's fair lock does: behind every live
    /// waiter of the key that came before, and a request that does not wait
    /// takes no key past one. A waiter that died is skipped once its entry
    /// lapses (the backend's page says after how long).
    ///
    /// Backends whose waiting is always fair ([`Capabilities::fair`]) take it as
    /// it is; where waiting is unfair by default
    /// ([`Capabilities::fair_on_request`]), only fair requests wait their turn,
    /// so ask for it on every request of the key. Elsewhere (Redlock) it is
    /// refused with [`crate::LockError::Unsupported`].
    ///
    /// [`Capabilities::fair`]: crate::Capabilities::fair
    /// [`Capabilities::fair_on_request`]: crate::Capabilities::fair_on_request
    pub fn fair(mut self) -> Self {
        self.fair = true;
        self
    }

    /// Acquires as `owner`. Acquiring again with the same owner is reentrant. An
    /// owner without a label gets the [`Locker`]'s.
    pub fn owner(mut self, owner: OwnerId) -> Self {
        self.owner = Some(owner);
        self
    }
}

impl<'a> IntoFuture for LockRequest<'a> {
    type Output = Result<LockGuard>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<LockGuard>> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        let locker = self.locker;
        Box::pin(locker.acquire(self))
    }
}
