//! The contract between the client machinery and a backend.
//!
//! A driver implements [`LockDriver`]: atomic acquire (with a wait mode), extend and
//! release, each keyed by `(key, owner)`. Everything above that — reentrancy counts,
//! the watchdog, the lost signal, release on drop, cancellation safety — is written
//! once in [`crate::Locker`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use crate::error::Result;
use crate::loss::LossSignal;
use crate::types::{FencingToken, LockKey, OwnerId};

/// How long an acquire may wait for a held lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Wait {
    /// Fail at once with [`crate::LockError::Contended`] if the lock is held.
    NoWait,
    /// Wait until this instant, then fail with [`crate::LockError::Timeout`].
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
/// The client runs every driver acquire on a task of its own, so a caller dropping
/// its future never cuts a backend request in half. Instead this signal fires:
/// a driver stops *waiting* when it does (returning [`crate::LockError::Cancelled`]
/// and removing any queue entry it made), but lets an attempt already sent finish.
/// Whatever that attempt was granted, the client then releases.
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
    /// Who asks.
    pub owner: OwnerId,
    /// The lease to set on success.
    pub ttl: Duration,
    /// How long to wait if the lock is held.
    pub wait: Wait,
    /// Fires when the caller has gone away: stop waiting.
    pub cancel: Cancellation,
}

impl AcquireRequest {
    /// A request for `key` by `owner` with lease `ttl`.
    pub fn new(key: LockKey, owner: OwnerId, ttl: Duration, wait: Wait) -> Self {
        Self {
            key,
            owner,
            ttl,
            wait,
            cancel: Cancellation::new(),
        }
    }

    /// After a failed attempt: the error to return ([`crate::LockError::Contended`]
    /// for [`Wait::NoWait`], [`crate::LockError::Timeout`] once the wait is over),
    /// or until when waiting may go on (`None`: forever). `started` is when the
    /// acquire began.
    ///
    /// # Errors
    ///
    /// As described: the error ends the acquire.
    pub fn keep_waiting(&self, started: Instant) -> crate::Result<Option<Instant>> {
        let until = match self.wait {
            Wait::NoWait => {
                return Err(crate::LockError::Contended {
                    key: self.key.to_string(),
                });
            }
            Wait::Until(deadline) => Some(deadline),
            Wait::Forever => None,
        };
        if until.is_some_and(|d| Instant::now() >= d) {
            return Err(crate::LockError::Timeout {
                key: self.key.to_string(),
                waited: started.elapsed(),
            });
        }
        Ok(until)
    }

    /// The error a driver returns when [`AcquireRequest::cancel`] fires.
    pub fn cancelled(&self) -> crate::LockError {
        crate::LockError::Cancelled {
            key: self.key.to_string(),
        }
    }
}

/// What a driver returns when it grants a lock.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Grant {
    /// The lock.
    pub key: LockKey,
    /// The holder.
    pub owner: OwnerId,
    /// The fencing token of this hold.
    pub token: FencingToken,
    /// When the lease ends, on the monotonic clock, measured from *before* the request
    /// that set it was sent (so it is never later than the backend's own expiry).
    pub deadline: Instant,
    /// Fires when the backend tells the driver the hold is gone (see [`LossSignal`]).
    pub loss: Option<LossSignal>,
    /// The lease the backend actually applies, when it differs from the one asked
    /// for: how long the backend keeps the hold after its last renewal if the
    /// holder vanishes. etcd, for one, grants no lease shorter than 1.5 × its
    /// election timeout (2 s with default flags), and only whole seconds. `None`:
    /// the lease asked for.
    pub effective_ttl: Option<Duration>,
}

impl Grant {
    /// A grant of `key` to `owner`.
    pub fn new(key: LockKey, owner: OwnerId, token: FencingToken, deadline: Instant) -> Self {
        Self {
            key,
            owner,
            token,
            deadline,
            loss: None,
            effective_ttl: None,
        }
    }

    /// With the lease the backend applies, where it is not the one asked for (see
    /// [`Grant::effective_ttl`]).
    pub fn with_effective_ttl(mut self, ttl: Duration) -> Self {
        self.effective_ttl = Some(ttl);
        self
    }

    /// With a signal the driver fires the moment it learns the hold is gone (a
    /// session that disconnected or expired, a deleted node), so that
    /// [`crate::LockGuard::lost`] fires then rather than at the next renewal.
    pub fn with_loss_signal(mut self, loss: LossSignal) -> Self {
        self.loss = Some(loss);
        self
    }
}

/// One renewal in a batch (see [`LockDriver::extend_many`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Renewal {
    /// The lock.
    pub key: LockKey,
    /// The holder.
    pub owner: OwnerId,
    /// The new lease, counted from now.
    pub ttl: Duration,
}

impl Renewal {
    /// A renewal of `key` held by `owner` for another `ttl`.
    pub fn new(key: LockKey, owner: OwnerId, ttl: Duration) -> Self {
        Self { key, owner, ttl }
    }
}

/// How waiters learn that a lock was released.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WakeUp {
    /// The backend notifies (in-process notify, pub/sub, watch, LISTEN/NOTIFY…).
    Notify,
    /// Waiters poll with jittered backoff.
    Poll,
}

/// What a driver can do; the conformance suite skips cases whose capability is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Capabilities {
    /// Grants carry strictly increasing fencing tokens.
    pub fencing: bool,
    /// Waiters are served first-come first-served.
    pub fair: bool,
    /// Acquire by the current owner is recognised by the backend (idempotent).
    pub reentrant_server_side: bool,
    /// A read-write lock is available.
    pub read_write: bool,
    /// A counting semaphore is available.
    pub semaphore: bool,
    /// Holds are visible to other processes (false for the in-process `mem` driver).
    pub cross_process: bool,
    /// A hold the holder stops renewing expires on the backend after its TTL (false
    /// for session-bound locks, which last exactly as long as the holder's session).
    pub lease_expiry: bool,
    /// How waiters are woken.
    pub wake_up: WakeUp,
}

impl Capabilities {
    /// The baseline every driver must meet: fencing, server-side reentrancy, polling.
    pub const fn baseline() -> Self {
        Self {
            fencing: true,
            fair: false,
            reentrant_server_side: true,
            read_write: false,
            semaphore: false,
            cross_process: true,
            lease_expiry: true,
            wake_up: WakeUp::Poll,
        }
    }

    /// With (or without) backend-side lease expiry.
    pub const fn with_lease_expiry(mut self, lease_expiry: bool) -> Self {
        self.lease_expiry = lease_expiry;
        self
    }

    /// With waiters woken as `wake_up` says.
    pub const fn with_wake_up(mut self, wake_up: WakeUp) -> Self {
        self.wake_up = wake_up;
        self
    }

    /// With (or without) first-come first-served waiters.
    pub const fn with_fair(mut self, fair: bool) -> Self {
        self.fair = fair;
        self
    }

    /// With holds visible to other processes, or not.
    pub const fn with_cross_process(mut self, cross_process: bool) -> Self {
        self.cross_process = cross_process;
        self
    }

    /// With (or without) fencing tokens.
    pub const fn with_fencing(mut self, fencing: bool) -> Self {
        self.fencing = fencing;
        self
    }

    /// With (or without) a read-write lock ([`LockDriver::read_write`] returns it).
    pub const fn with_read_write(mut self, read_write: bool) -> Self {
        self.read_write = read_write;
        self
    }

    /// With (or without) server-side reentrancy.
    pub const fn with_reentrant_server_side(mut self, yes: bool) -> Self {
        self.reentrant_server_side = yes;
        self
    }
}

/// The object-safe async trait each backend implements.
///
/// Rules every implementation keeps:
/// - `acquire` is atomic: the lock is granted only if it is free, expired, or already
///   held by `req.owner` — in which case the same token is returned and the lease is
///   refreshed (this makes retries after an unknown outcome safe).
/// - the returned [`Grant::deadline`] is measured from before the request was sent.
/// - `extend` and `release` act only on a hold owned by `owner`; they never touch
///   another owner's lock. `extend` of a hold that is gone returns
///   [`crate::LockError::Lost`].
/// - waiting is bounded by [`Wait`], wakes on a backend signal where there is one,
///   and stops when [`AcquireRequest::cancel`] fires.
#[async_trait]
pub trait LockDriver: Send + Sync + fmt::Debug + 'static {
    /// A short name for messages and reports (`"sqlite"`, `"mem"`).
    fn name(&self) -> &'static str;

    /// What this driver supports.
    fn capabilities(&self) -> Capabilities;

    /// Takes the lock, waiting as `req.wait` allows.
    ///
    /// # Errors
    ///
    /// [`crate::LockError::Contended`] for [`Wait::NoWait`],
    /// [`crate::LockError::Timeout`] when the wait runs out, or a backend error.
    async fn acquire(&self, req: &AcquireRequest) -> Result<Grant>;

    /// Pushes the lease of `owner`'s hold on `key` out to `ttl` from now, and returns
    /// the new deadline.
    ///
    /// # Errors
    ///
    /// [`crate::LockError::Lost`] when `owner` no longer holds `key`.
    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant>;

    /// Renews many holds at once. The default renews one by one; drivers that can
    /// batch (one SQL statement, one pipeline) override it.
    async fn extend_many(&self, renewals: &[Renewal]) -> Vec<Result<Instant>> {
        let mut out = Vec::with_capacity(renewals.len());
        for r in renewals {
            out.push(self.extend(&r.key, &r.owner, r.ttl).await);
        }
        out
    }

    /// Releases `owner`'s hold on `key`. Returns whether `owner` held it.
    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool>;

    /// The read-write lock of this driver, if it has one (then
    /// [`Capabilities::read_write`] is true).
    fn read_write(&self) -> Option<&dyn ReadWriteDriver> {
        None
    }

    /// Frees `key` whoever holds it: an operator's break-glass (Redisson's
    /// `forceUnlock`), and how the conformance suite makes a hold vanish. The holder
    /// learns at its next renewal. Returns whether there was a live holder.
    ///
    /// # Errors
    ///
    /// [`crate::LockError::Unsupported`] by default.
    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        let _ = key;
        Err(crate::LockError::Unsupported {
            driver: self.name(),
            capability: "force_release",
        })
    }

    /// Removes every trace of `key` from the backend: any holder, any waiter's
    /// queue entry, and its fencing counter. This is how `lockkit check`, `lockkit
    /// bench` and the conformance suite leave nothing behind on a live backend.
    ///
    /// **Only for keys nobody will use again.** A purged key's tokens start over,
    /// so a resource that saw its old tokens refuses the new ones; and its holder
    /// learns of the loss only at its next renewal.
    ///
    /// # Errors
    ///
    /// [`crate::LockError::Unsupported`] by default; a backend error.
    async fn purge(&self, key: &LockKey) -> Result<()> {
        let _ = key;
        Err(crate::LockError::Unsupported {
            driver: self.name(),
            capability: "purge",
        })
    }
}

/// A read-write lock: many readers, or one writer.
///
/// The write lock of a key is the driver's ordinary exclusive lock of that key
/// ([`LockDriver::acquire`]): a writer excludes readers and other writers, and
/// readers exclude writers but share with each other. Extend and release are
/// [`LockDriver`]'s, keyed by `(key, owner)` as for any hold, whichever its mode.
///
/// Drivers that have one return it from [`LockDriver::read_write`]; applications use
/// [`crate::Locker::read_lock`] and [`crate::Locker::write_lock`].
#[async_trait]
pub trait ReadWriteDriver: Send + Sync + 'static {
    /// Takes a shared (read) hold on `req.key`, waiting as `req.wait` allows: it
    /// is granted once no writer holds the key or queued before it.
    ///
    /// An owner that already holds the key returns its existing grant, refreshed,
    /// whatever that hold's mode (a write hold covers reading).
    ///
    /// # Errors
    ///
    /// As [`LockDriver::acquire`].
    async fn acquire_shared(&self, req: &AcquireRequest) -> Result<Grant>;
}

/// Whether a hold excludes everyone (a mutex or write lock) or only writers (a read
/// lock).
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
}

impl fmt::Display for LockMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LockMode::Exclusive => "exclusive",
            LockMode::Shared => "shared",
        })
    }
}

/// A boxed future returning a driver, as produced by a [`DriverEntry`].
pub type ConnectFuture = Pin<Box<dyn Future<Output = Result<Arc<dyn LockDriver>>> + Send>>;

/// How the facade finds a driver by URL scheme: each driver crate exports one of these
/// as `DRIVER`.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct DriverEntry {
    /// The driver's name.
    pub name: &'static str,
    /// The URL schemes it accepts (without `://`).
    pub schemes: &'static [&'static str],
    /// The Cargo feature of the `lockkit` facade that compiles it in.
    pub feature: &'static str,
    /// Connects to the backend at `url`.
    pub connect: fn(&str) -> ConnectFuture,
}

impl DriverEntry {
    /// Describes a driver.
    pub const fn new(
        name: &'static str,
        schemes: &'static [&'static str],
        feature: &'static str,
        connect: fn(&str) -> ConnectFuture,
    ) -> Self {
        Self {
            name,
            schemes,
            feature,
            connect,
        }
    }

    /// Whether this driver accepts `url`'s scheme.
    pub fn accepts(&self, url: &str) -> bool {
        url_scheme(url).is_some_and(|s| self.schemes.iter().any(|k| k.eq_ignore_ascii_case(s)))
    }
}

impl fmt::Debug for DriverEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DriverEntry")
            .field("name", &self.name)
            .field("schemes", &self.schemes)
            .finish_non_exhaustive()
    }
}

/// The scheme of `url`: the part before `:` (`sqlite::memory:` → `sqlite`).
pub fn url_scheme(url: &str) -> Option<&str> {
    let (scheme, _) = url.split_once(':')?;
    let valid = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then_some(scheme)
}
