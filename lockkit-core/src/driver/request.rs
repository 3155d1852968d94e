//! What a driver is asked for: one acquire request, with its mode, its wait and
//! its cancellation.

use std::fmt;
use std::time::Duration;

use tokio::time::Instant;

use super::holder_text::holder_text;
use crate::error::LockError;
use crate::types::{LockKey, OwnerId};

/// What a hold excludes, in a request and in its grant.
///
/// One key is one lock: its holders are all of one family. An exclusive hold (a
/// mutex, or the write side of a read-write lock) excludes every other hold;
/// shared holds (the read side) share the key with each other; permits of a
/// counting semaphore share it with each other, `limit` at a time. A shared hold
/// and a permit exclude each other.
///
/// # What every driver promises, for every mode
///
/// The conformance suite proves each of these on every driver that grants the mode
/// ([`crate::Capabilities::supports`]); a driver that lacks a mode refuses it with
/// [`crate::LockError::Unsupported`] naming the mode and the driver.
///
/// - **Every grant is fenced.** Its token is strictly greater than every token
///   granted before on the key, whatever their modes: across readers and writers,
///   and across every permit of a semaphore.
/// - **Every hold is leased** (or session-bound, where the backend says so),
///   renewed by the watchdog, and signals [`crate::LockGuard::lost`]; reentrancy is
///   by owner, as for a lock.
/// - **Read-write.** A writer excludes everyone; readers share. Where the backend
///   orders its waiters ([`crate::Capabilities::fair`]), a reader never overtakes a
///   writer queued before it, so readers cannot starve a writer. A write hold
///   covers a read by the same owner; a read hold is never upgraded in place.
/// - **Semaphore.** At most `limit` permits are held at any moment. Each permit is
///   leased and renewed on its own, and an expired or abandoned permit is free
///   again. Every user of a key gives the same `limit`: a request whose limit
///   differs from the one its holders use fails with [`crate::LockError::Config`],
///   at once. Where the backend can notify, a release wakes one waiter, not all.
///
/// # Examples
///
/// ```
/// use lockkit::LockMode;
///
/// assert!(LockMode::Shared.compatible_with(LockMode::Shared));
/// assert!(!LockMode::Exclusive.compatible_with(LockMode::Shared));
/// assert!(LockMode::Permit { limit: 3 }.compatible_with(LockMode::Permit { limit: 3 }));
/// assert_eq!(LockMode::Permit { limit: 3 }.to_string(), "permit (limit 3)");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum LockMode {
    /// Excludes every other holder: [`crate::Locker::lock`] and
    /// [`crate::Locker::write_lock`].
    #[default]
    Exclusive,
    /// Shares with other shared holders and excludes exclusive ones:
    /// [`crate::Locker::read_lock`].
    Shared,
    /// One permit of a counting semaphore of `limit` permits:
    /// [`crate::Locker::semaphore`]. Every holder of the key uses the same limit.
    Permit {
        /// How many permits the semaphore has (at least 1).
        limit: u32,
    },
}

impl LockMode {
    /// Whether a hold of this mode may be granted while one of `held` exists.
    pub fn compatible_with(self, held: LockMode) -> bool {
        matches!(
            (self, held),
            (LockMode::Shared, LockMode::Shared)
                | (LockMode::Permit { .. }, LockMode::Permit { .. })
        )
    }

    /// The semaphore's limit, for a permit.
    pub fn limit(self) -> Option<u32> {
        match self {
            LockMode::Permit { limit } => Some(limit),
            _ => None,
        }
    }
}

impl fmt::Display for LockMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockMode::Exclusive => f.write_str("exclusive"),
            LockMode::Shared => f.write_str("shared"),
            LockMode::Permit { limit } => write!(f, "permit (limit {limit})"),
        }
    }
}

/// How long an acquire may wait for a held lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Wait {
    /// Fail at once with [`LockError::Contended`] if the lock is held.
    NoWait,
    /// Wait until this instant, then fail with [`LockError::Timeout`].
    Until(Instant),
    /// Wait as long as it takes.
    Forever,
}

impl Wait {
    /// A wait of at most `d` from now; an absurdly long `d` means [`Wait::Forever`].
    pub fn at_most(d: Duration) -> Self {
        match Instant::now().checked_add(d) {
            Some(deadline) => Wait::Until(deadline),
            None => Wait::Forever,
        }
    }

    /// The instant waiting must stop, if any.
    pub fn deadline(self) -> Option<Instant> {
        match self {
            Wait::NoWait => Some(Instant::now()),
            Wait::Until(d) => Some(d),
            Wait::Forever => None,
        }
    }
}

/// Tells a driver that the caller of an acquire has gone away.
///
/// The client runs every driver acquire so that a caller dropping its future never
/// cuts a backend request in half. Instead this signal fires: the wait stops
/// (returning [`LockError::Cancelled`] and cleaning up any queue entry), but an
/// attempt already sent finishes. Whatever that attempt was granted, the client
/// then releases.
#[derive(Debug, Clone, Default)]
pub struct Cancellation(tokio_util::sync::CancellationToken);

impl Cancellation {
    /// A signal that has not fired.
    pub fn new() -> Self {
        Self::default()
    }

    /// Fires the signal.
    pub fn cancel(&self) {
        self.0.cancel();
    }

    /// Whether it has fired.
    pub fn is_cancelled(&self) -> bool {
        self.0.is_cancelled()
    }

    /// Resolves when it fires: put this in every wait's `select!`.
    pub async fn cancelled(&self) {
        self.0.cancelled().await;
    }
}

/// One acquisition request, as the client hands it to a driver.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AcquireRequest {
    /// The lock.
    pub key: LockKey,
    /// Who asks (its label is what inspection shows of it).
    pub owner: OwnerId,
    /// What the hold excludes.
    pub mode: LockMode,
    /// The lease to set on success.
    pub ttl: Duration,
    /// How long to wait if the lock is held.
    pub wait: Wait,
    /// Fires when the caller has gone away: stop waiting.
    pub cancel: Cancellation,
    /// The value an election's candidate stores with its hold (see
    /// [`crate::Election`]); `None` for plain locks.
    pub value: Option<String>,
    /// Served in arrival order ([`crate::LockRequest::fair`]): the driver keeps
    /// the request behind every live waiter that came before it, and a request
    /// that does not wait takes no key past one. The engine refuses it on a
    /// driver with neither [`Capabilities::fair`](crate::Capabilities::fair) nor
    /// [`Capabilities::fair_on_request`](crate::Capabilities::fair_on_request).
    pub fair: bool,
}

impl AcquireRequest {
    /// An exclusive request for `key` by `owner` with lease `ttl`.
    pub fn new(key: LockKey, owner: OwnerId, ttl: Duration, wait: Wait) -> Self {
        Self {
            key,
            owner,
            mode: LockMode::Exclusive,
            ttl,
            wait,
            cancel: Cancellation::new(),
            value: None,
            fair: false,
        }
    }

    /// The same request, storing `value` with the hold.
    pub fn with_value(mut self, value: impl Into<String>) -> Self {
        self.value = Some(value.into());
        self
    }

    /// What the driver stores beside the owner id, where the backend keeps a
    /// holder's label: the owner's label and the request's value, as one text
    /// ([`holder_text`]).
    pub fn stored_label(&self) -> Option<String> {
        holder_text(self.owner.label(), self.value.as_deref())
    }

    /// The same request in `mode`.
    pub fn with_mode(mut self, mode: LockMode) -> Self {
        self.mode = mode;
        self
    }

    /// After a busy attempt: the error to return ([`LockError::Contended`] for
    /// [`Wait::NoWait`], [`LockError::Timeout`] once the wait is over), or until when
    /// waiting may go on (`None`: forever). `started` is when the acquire began.
    ///
    /// Drivers do not call this: the engine ([`crate::driver::acquire`]) does.
    pub(crate) fn keep_waiting(&self, started: Instant) -> crate::Result<Option<Instant>> {
        let until = match self.wait {
            Wait::NoWait => {
                return Err(LockError::Contended {
                    key: self.key.to_string(),
                });
            }
            Wait::Until(deadline) => Some(deadline),
            Wait::Forever => None,
        };
        if until.is_some_and(|d| Instant::now() >= d) {
            return Err(LockError::Timeout {
                key: self.key.to_string(),
                waited: started.elapsed(),
            });
        }
        Ok(until)
    }

    /// The error a driver returns when [`AcquireRequest::cancel`] fires.
    pub fn cancelled(&self) -> LockError {
        LockError::Cancelled {
            key: self.key.to_string(),
        }
    }

    /// The error for a request whose mode `driver` does not support.
    pub fn unsupported(&self, driver: &'static str) -> LockError {
        LockError::Unsupported {
            driver,
            capability: match self.mode {
                LockMode::Exclusive => "exclusive locks",
                LockMode::Shared => "shared (read) locks: read-write locks",
                LockMode::Permit { .. } => "permits: counting semaphores",
            },
        }
    }
}
