//! [`Locker`]: the user-facing client over any [`LockDriver`].

use std::collections::HashMap;
use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::guard::LockGuard;
use super::hold::Hold;
use super::pending::PendingAcquire;
use super::watchdog;
use crate::driver::{AcquireRequest, Capabilities, LockDriver, LockMode, Wait};
use crate::error::{LockError, Result};
use crate::types::{LockKey, OwnerId, validate_ttl};

/// The lease the watchdog keeps renewing when no fixed lease is given (as Redisson's
/// `lockWatchdogTimeout`).
pub const DEFAULT_WATCHDOG_TTL: Duration = Duration::from_secs(30);

/// A lock client over one backend connection.
///
/// Cheap to clone; clones share the connection, the reentrancy table and the watchdog
/// (one renewal task per `Locker`, however many locks it holds).
///
/// Each [`lock`](Locker::lock) call acquires as a fresh [`OwnerId`] unless one is given
/// with [`LockRequest::owner`]; so two tasks sharing a `Locker` exclude each other like
/// a mutex. Acquiring again with an owner that already holds the key is reentrant: it
/// returns another guard with the same fencing token, and the lock is released when the
/// last of those guards is.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use lockkit::{Locker, mem::MemDriver}; // `mem`: the `mem` feature
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), lockkit::LockError> {
/// let locker = Locker::new(Arc::new(MemDriver::new()));
/// let guard = locker.lock("inventory:sku-42").wait(Duration::from_secs(5)).await?;
/// println!("holding with fencing token {}", guard.token());
/// assert!(locker.try_lock("inventory:sku-42").await.is_err());
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Locker {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) driver: Arc<dyn LockDriver>,
    holds: Mutex<Registry>,
    watchdog_wake: Arc<Notify>,
    watchdog_started: OnceLock<()>,
    default_ttl: Duration,
}

/// The holds of one `Locker`, by `(key, owner)`, and the watchdog's schedule.
#[derive(Default)]
struct Registry {
    map: HashMap<(LockKey, OwnerId), Weak<Hold>>,
    /// When the watchdog will next look at the holds by itself; `None` when it is
    /// idle or not started.
    watchdog_wakes_at: Option<Instant>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.watchdog_wake.notify_one();
    }
}

impl fmt::Debug for Locker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Locker")
            .field("driver", &self.inner.driver.name())
            .field("default_ttl", &self.inner.default_ttl)
            .finish_non_exhaustive()
    }
}

impl Locker {
    /// A client over `driver`, with the default watchdog lease of 30 s.
    pub fn new(driver: Arc<dyn LockDriver>) -> Self {
        Self::with_default_ttl(driver, DEFAULT_WATCHDOG_TTL)
    }

    /// A client whose watchdog lease (the TTL used when a lock is taken without
    /// [`LockRequest::ttl`] or [`LockRequest::lease`]) is `ttl`.
    pub fn with_default_ttl(driver: Arc<dyn LockDriver>, ttl: Duration) -> Self {
        Self {
            inner: Arc::new(Inner {
                driver,
                holds: Mutex::new(Registry::default()),
                watchdog_wake: Arc::new(Notify::new()),
                watchdog_started: OnceLock::new(),
                default_ttl: ttl,
            }),
        }
    }

    /// The driver underneath.
    pub fn driver(&self) -> &Arc<dyn LockDriver> {
        &self.inner.driver
    }

    /// What the backend supports.
    pub fn capabilities(&self) -> Capabilities {
        self.inner.driver.capabilities()
    }

    /// Starts building a lock request for `key`; `.await` it to acquire.
    ///
    /// By default the request waits as long as it takes and the watchdog renews the
    /// lease every `ttl / 3` until the guard is released.
    pub fn lock(&self, key: impl Into<String>) -> LockRequest<'_> {
        LockRequest {
            locker: self,
            key: key.into(),
            ttl: None,
            fixed: false,
            wait: WaitSpec::Forever,
            owner: None,
            mode: LockMode::Exclusive,
            rw_write: false,
        }
    }

    /// Starts building a request for a shared (read) hold on `key`: it waits only
    /// for writers, and shares the key with other readers. Needs a driver with
    /// [`Capabilities::read_write`]; the write lock of the same key is
    /// [`write_lock`](Locker::write_lock).
    ///
    /// Guards, renewal, the lost signal and release work as for [`lock`](Locker::lock).
    /// An owner that holds the key for writing may also take it for reading (the
    /// write hold covers it); the reverse, upgrading a read hold, is refused.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #[allow(dead_code)]
    /// # async fn demo(locker: lockkit::Locker) -> Result<(), lockkit::LockError> {
    /// use std::time::Duration;
    /// let a = locker.read_lock("catalog").wait(Duration::from_secs(5)).await?;
    /// let b = locker.read_lock("catalog").wait(Duration::from_secs(5)).await?; // shares
    /// assert!(locker.write_lock("catalog").no_wait().await.is_err()); // readers hold it
    /// # drop((a, b)); Ok(()) }
    /// ```
    pub fn read_lock(&self, key: impl Into<String>) -> LockRequest<'_> {
        let mut request = self.lock(key);
        request.mode = LockMode::Shared;
        request
    }

    /// Starts building a request for the write hold of a read-write lock: it waits
    /// for every reader and writer queued before it and excludes all of them. On a
    /// driver with [`Capabilities::read_write`] this is the same lock as
    /// [`lock`](Locker::lock) of the same key; other drivers refuse it with
    /// [`LockError::Unsupported`].
    pub fn write_lock(&self, key: impl Into<String>) -> LockRequest<'_> {
        let mut request = self.lock(key);
        request.rw_write = true;
        request
    }

    /// Takes `key` if it is free right now.
    ///
    /// # Errors
    ///
    /// [`LockError::Contended`] if another owner holds it, [`LockError::InvalidKey`]
    /// for a bad key, or a backend error.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a dropped call releases anything it may have taken, in the
    /// background.
    pub async fn try_lock(&self, key: impl Into<String>) -> Result<LockGuard> {
        self.lock(key).no_wait().await
    }

    fn ensure_watchdog(&self) {
        self.inner.watchdog_started.get_or_init(|| {
            tokio::spawn(watchdog::run(
                Arc::downgrade(&self.inner),
                self.inner.watchdog_wake.clone(),
            ));
        });
        self.inner.watchdog_wake.notify_one();
    }

    fn live_hold(&self, key: &LockKey, owner: &OwnerId) -> Option<Arc<Hold>> {
        let holds = self.inner.holds();
        let hold = holds.map.get(&(key.clone(), owner.clone()))?.upgrade()?;
        hold.try_reenter().then_some(hold)
    }

    async fn acquire(&self, req: LockRequest<'_>) -> Result<LockGuard> {
        let key = LockKey::new(req.key)?;
        let ttl = validate_ttl(req.ttl.unwrap_or(self.inner.default_ttl))?;
        let wait = match req.wait {
            WaitSpec::NoWait => Wait::NoWait,
            WaitSpec::Forever => Wait::Forever,
            WaitSpec::AtMost(d) => Wait::at_most(d),
        };
        let owner = req.owner.unwrap_or_default();
        let renew_ttl = (!req.fixed).then_some(ttl);
        let mode = req.mode;
        if (mode == LockMode::Shared || req.rw_write) && !self.capabilities().read_write {
            return Err(LockError::Unsupported {
                driver: self.inner.driver.name(),
                capability: "read-write locks",
            });
        }

        if let Some(hold) = self.live_hold(&key, &owner) {
            if hold.mode == LockMode::Shared && mode == LockMode::Exclusive {
                // Drop the count `live_hold` just took.
                drop(LockGuard::new(hold, self.inner.clone()));
                return Err(LockError::Unsupported {
                    driver: self.inner.driver.name(),
                    capability: "upgrading a read hold to a write hold (release the read hold first)",
                });
            }
            tracing::debug!(%key, count = hold.count(), "reentrant acquire");
            return Ok(LockGuard::new(hold, self.inner.clone()));
        }

        let driver = &self.inner.driver;
        let span = tracing::debug_span!("lockkit.acquire", driver = driver.name(), %key, ttl_ms = ttl.as_millis() as u64);
        let started = Instant::now();
        let request = AcquireRequest::new(key.clone(), owner.clone(), ttl, wait);
        // From here on, dropping this future cancels the wait and releases whatever
        // the in-flight attempt is granted, after it lands (see `pending`).
        let mut pending = PendingAcquire::start(driver.clone(), request, mode, span.clone());
        let grant = match pending.join().await {
            Ok(grant) => grant,
            Err(e) => {
                if e.is_retryable() {
                    // Unknown outcome: the backend may have granted it.
                    pending.release_later();
                }
                return Err(e);
            }
        };
        if Instant::now() >= grant.deadline {
            // Never report "acquired" after the lease deadline.
            pending.release_later();
            return Err(LockError::lost(
                &key,
                format!("the lease of {ttl:?} ran out before the grant arrived; use a longer TTL"),
            ));
        }
        span.in_scope(|| {
            tracing::debug!(
                token = grant.token.get(),
                waited_ms = started.elapsed().as_millis() as u64,
                "acquired"
            )
        });

        let (hold, wake_watchdog) = {
            let mut holds = self.inner.holds();
            let slot = (key.clone(), owner.clone());
            // A concurrent acquire by the same owner may have registered first.
            let hold = match holds.map.get(&slot).and_then(Weak::upgrade) {
                Some(existing) if existing.try_reenter() => existing,
                _ => {
                    let hold = Arc::new(Hold::new(grant, mode, ttl, renew_ttl, started));
                    holds.map.insert(slot, Arc::downgrade(&hold));
                    hold
                }
            };
            // Wake the watchdog only if this hold is due before its next round
            // (read under the same lock the watchdog schedules under).
            let wake = hold.renew_ttl.is_some()
                && holds
                    .watchdog_wakes_at
                    .is_none_or(|at| hold.next_renewal() < at);
            (hold, wake)
        };
        if wake_watchdog {
            self.ensure_watchdog();
        }
        Ok(LockGuard::new(hold, self.inner.clone()))
    }
}

impl Inner {
    fn holds(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.holds.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Forgets a hold that was released or lost.
    pub(crate) fn forget(&self, hold: &Hold) {
        let mut holds = self.holds();
        let slot = (hold.key.clone(), hold.owner.clone());
        if let Some(existing) = holds.map.get(&slot)
            && std::ptr::eq(existing.as_ptr(), hold)
        {
            holds.map.remove(&slot);
        }
    }

    /// Holds the watchdog should renew now (due, or nearly), and when the next one
    /// is due.
    pub(crate) fn watched_holds(&self, now: Instant) -> (Vec<Arc<Hold>>, Option<Instant>) {
        let mut holds = self.holds();
        holds.map.retain(|_, h| h.strong_count() > 0);
        let mut due = Vec::new();
        let mut next: Option<Instant> = None;
        for hold in holds.map.values().filter_map(Weak::upgrade) {
            if hold.renew_ttl.is_none() || hold.is_released() || !hold.is_live() {
                continue;
            }
            let at = hold.next_renewal();
            // Renewing up to ttl/6 early is harmless and puts holds taken at
            // slightly different times on one schedule: one batch per round.
            let slack = hold.renew_ttl.map_or(Duration::ZERO, |ttl| ttl / 6);
            if at <= now + slack {
                due.push(hold);
            } else {
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        // With work due the watchdog rescans at once; otherwise it sleeps until
        // `next` (forever if `None`).
        holds.watchdog_wakes_at = if due.is_empty() { next } else { Some(now) };
        (due, next)
    }
}

#[derive(Debug, Clone, Copy)]
enum WaitSpec {
    NoWait,
    AtMost(Duration),
    Forever,
}

/// A lock request being built; `.await` it to acquire.
///
/// # Cancel safety
///
/// Dropping the future before it completes leaves no hold behind: anything the backend
/// granted in the meantime is released in the background.
#[must_use = "a lock request does nothing until it is awaited"]
#[derive(Debug)]
pub struct LockRequest<'a> {
    locker: &'a Locker,
    key: String,
    ttl: Option<Duration>,
    fixed: bool,
    wait: WaitSpec,
    owner: Option<OwnerId>,
    mode: LockMode,
    /// Asked for as [`Locker::write_lock`]: needs a read-write driver.
    rw_write: bool,
}

impl LockRequest<'_> {
    /// The lease the watchdog keeps renewing every `ttl / 3` while the guard lives.
    /// If the process stalls or dies, the lock is free at most `ttl` later.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self.fixed = false;
        self
    }

    /// A fixed lease: no watchdog; the lock expires `lease` after it was requested
    /// unless [`LockGuard::extend`] pushes it out.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.ttl = Some(lease);
        self.fixed = true;
        self
    }

    /// Waits at most `wait` for a held lock, then fails with [`LockError::Timeout`].
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = WaitSpec::AtMost(wait);
        self
    }

    /// Waits as long as it takes (the default).
    pub fn wait_forever(mut self) -> Self {
        self.wait = WaitSpec::Forever;
        self
    }

    /// Does not wait: fails with [`LockError::Contended`] if the lock is held.
    pub fn no_wait(mut self) -> Self {
        self.wait = WaitSpec::NoWait;
        self
    }

    /// Acquires as `owner`. Acquiring again with the same owner is reentrant.
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
