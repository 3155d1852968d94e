//! [`Locker`]: the user-facing client over any [`LockDriver`].

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::Notify;

use super::guard::LockGuard;
use super::label::default_label;
use super::registry::Registry;
use super::release::InFlight;
use super::request::LockRequest;
use super::semaphore::Semaphore;
use super::watchdog;
use crate::driver::{Capabilities, Inspection, LockDriver, LockMode};
use crate::error::Result;
use crate::sync::lock;
use crate::types::LockKey;

/// The lease the watchdog keeps renewing when no fixed lease is given (as Redisson's
/// `lockWatchdogTimeout`).
pub const DEFAULT_WATCHDOG_TTL: Duration = Duration::from_secs(30);

/// A lock client over one backend connection: mutexes, read-write locks, counting
/// semaphores, and inspection.
///
/// Cheap to clone; clones share the connection, the reentrancy table and the watchdog
/// (one renewal task per `Locker`, however many locks it holds).
///
/// Each acquire ([`lock`](Locker::lock), [`read_lock`](Locker::read_lock),
/// [`write_lock`](Locker::write_lock), [`Semaphore::acquire`]) is a fresh
/// [`crate::OwnerId`] unless one is given with [`LockRequest::owner`]; so two tasks
/// sharing a `Locker` exclude each other like a mutex. Acquiring again with an owner
/// that already holds the key is reentrant: it returns another guard with the same
/// fencing token, and the hold is released when the last of those guards is. A
/// write hold covers a read of the same key by its owner; a read hold is never
/// upgraded.
///
/// Every hold carries an owner label, shown by [`inspect`](Locker::inspect):
/// [`default_label`] (`host/pid/task-N`) unless [`with_label`](Locker::with_label)
/// sets one.
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
/// let locker = Locker::new(Arc::new(MemDriver::new())).with_label("billing-worker");
/// let guard = locker.lock("inventory:sku-42").wait(Duration::from_secs(5)).await?;
/// println!("holding with fencing token {}", guard.token());
/// assert!(locker.try_lock("inventory:sku-42").await.is_err());
///
/// let seen = locker.inspect("inventory:sku-42").await?;
/// assert_eq!(seen.holders[0].label.as_deref(), Some("billing-worker"));
/// guard.release().await?;
/// assert!(!locker.is_locked("inventory:sku-42").await?);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Locker {
    pub(super) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) driver: Arc<dyn LockDriver>,
    pub(super) holds: Registry,
    /// Releases under way, which an acquire by the same owner waits for.
    pub(super) releases: Arc<InFlight>,
    watchdog_wake: Arc<Notify>,
    watchdog_started: OnceLock<()>,
    pub(super) default_ttl: Duration,
    label: Mutex<Option<Arc<str>>>,
    /// How keys are grouped in the metrics' `group` label.
    #[cfg(feature = "metrics")]
    metrics_group: Mutex<Option<super::metrics::GroupFn>>,
}

impl Inner {
    /// The grouping set by [`Locker::with_metrics_group`], if any.
    #[cfg(feature = "metrics")]
    pub(crate) fn metrics_group(&self) -> Option<super::metrics::GroupFn> {
        lock(&self.metrics_group).clone()
    }
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
                holds: Registry::default(),
                releases: Arc::default(),
                watchdog_wake: Arc::new(Notify::new()),
                watchdog_started: OnceLock::new(),
                default_ttl: ttl,
                label: Mutex::default(),
                #[cfg(feature = "metrics")]
                metrics_group: Mutex::default(),
            }),
        }
    }

    /// Labels the holds this client (and its clones) takes from now on with
    /// `label` instead of [`default_label`]: what [`inspect`](Locker::inspect) and
    /// `lockkit inspect` show as the holder, such as `checkout-7/eu-west`. Control
    /// characters are dropped and the label is cut to 128 characters. The label is
    /// not the owner id, which stays secret.
    pub fn with_label(self, label: impl Into<String>) -> Self {
        let label = crate::types::clean_label(label.into());
        *lock(&self.inner.label) = Some(label.into());
        self
    }

    /// Groups keys in the metrics' `group` label by `group` (the `metrics`
    /// feature): `lockkit_*` metrics are labelled with the driver, the mode and
    /// `group(key)`, for the holds this client and its clones take from now on.
    /// Without it every key is in the group `all`. Keep the number of groups
    /// small: each is a time series per metric in the exporter.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use lockkit::{Locker, mem::MemDriver};
    ///
    /// // `inventory:sku-42` is in the group `inventory`.
    /// let locker = Locker::new(Arc::new(MemDriver::new())).with_metrics_group(|key| {
    ///     key.as_str().split(':').next().unwrap_or_default().to_owned()
    /// });
    /// assert_eq!(locker.driver().name(), "mem");
    /// ```
    #[cfg(feature = "metrics")]
    pub fn with_metrics_group(
        self,
        group: impl Fn(&LockKey) -> String + Send + Sync + 'static,
    ) -> Self {
        *lock(&self.inner.metrics_group) = Some(Arc::new(group));
        self
    }

    /// The label of the next hold taken, clean: [`with_label`](Self::with_label)
    /// cleaned it when it was set, and the default is cleaned here.
    pub(super) fn label(&self) -> String {
        let set = lock(&self.inner.label).clone();
        set.map_or_else(
            || crate::types::clean_label(default_label()),
            |l| l.to_string(),
        )
    }

    /// The driver underneath.
    pub fn driver(&self) -> &Arc<dyn LockDriver> {
        &self.inner.driver
    }

    /// What the backend supports.
    pub fn capabilities(&self) -> Capabilities {
        self.inner.driver.capabilities()
    }

    /// Starts building an exclusive lock request for `key`; `.await` it to acquire.
    ///
    /// By default the request waits as long as it takes and the watchdog renews the
    /// lease every `ttl / 3` until the guard is released.
    pub fn lock(&self, key: impl Into<String>) -> LockRequest<'_> {
        LockRequest::new(self, key.into(), LockMode::Exclusive)
    }

    /// Starts building a request for exclusive locks on every one of `keys`, all
    /// or none; `.await` it to acquire. Two requests for overlapping sets never
    /// deadlock, whatever order their keys are written in: the keys are taken in
    /// one global order. See [`MultiLockGuard`](super::MultiLockGuard).
    pub fn lock_all<I, K>(&self, keys: I) -> super::MultiLockRequest<'_>
    where
        I: IntoIterator<Item = K>,
        K: Into<String>,
    {
        super::MultiLockRequest::new(self, keys.into_iter().map(Into::into).collect())
    }

    /// Starts building a request for a shared (read) hold on `key`: it shares the
    /// key with other readers and waits for writers — including, on a backend that
    /// orders its waiters ([`Capabilities::fair`]), a writer queued before it. Needs
    /// a driver with [`Capabilities::shared`]; others refuse it with
    /// [`crate::LockError::Unsupported`].
    ///
    /// Guards, renewal, the lost signal and release work as for
    /// [`lock`](Locker::lock). An owner that holds the key for writing may also take
    /// it for reading (the write hold covers it); the reverse, upgrading a read
    /// hold, is refused.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::{sync::Arc, time::Duration};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), lockkit::LockError> {
    /// let locker = lockkit::Locker::new(Arc::new(lockkit::mem::MemDriver::new()));
    /// let a = locker.read_lock("catalog").wait(Duration::from_secs(5)).await?;
    /// let b = locker.read_lock("catalog").wait(Duration::from_secs(5)).await?; // shares
    /// assert!(locker.write_lock("catalog").no_wait().await.is_err()); // readers hold it
    /// # drop((a, b)); Ok(()) }
    /// ```
    pub fn read_lock(&self, key: impl Into<String>) -> LockRequest<'_> {
        LockRequest::new(self, key.into(), LockMode::Shared)
    }

    /// Starts building a request for the write hold of a read-write lock: it excludes
    /// every reader and writer. The write lock of a key *is* its exclusive lock
    /// ([`lock`](Locker::lock)), so it works on every driver.
    pub fn write_lock(&self, key: impl Into<String>) -> LockRequest<'_> {
        LockRequest::new(self, key.into(), LockMode::Exclusive)
    }

    /// A counting semaphore of `limit` permits on `key`: at most `limit` holders at
    /// once. Every user of the key must give the same `limit`; a different one is a
    /// [`crate::LockError::Config`] error. Needs a driver with
    /// [`Capabilities::permits`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), lockkit::LockError> {
    /// let locker = lockkit::Locker::new(Arc::new(lockkit::mem::MemDriver::new()));
    /// let pool = locker.semaphore("exports", 2);
    /// let a = pool.try_acquire().await?;
    /// let b = pool.try_acquire().await?;
    /// assert!(pool.try_acquire().await.is_err()); // both permits are out
    /// assert!(b.token() > a.token());
    /// # drop((a, b)); Ok(()) }
    /// ```
    pub fn semaphore(&self, key: impl Into<String>, limit: u32) -> Semaphore {
        Semaphore::new(self.clone(), key.into(), limit)
    }

    /// Takes `key` if it is free right now.
    ///
    /// # Errors
    ///
    /// [`crate::LockError::Contended`] if another owner holds it,
    /// [`crate::LockError::InvalidKey`] for a bad key, or a backend error.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a dropped call releases anything it may have taken, in the
    /// background.
    pub async fn try_lock(&self, key: impl Into<String>) -> Result<LockGuard> {
        self.lock(key).no_wait().await
    }

    /// Who holds `key` — each holder's mode, token, remaining lease and label — and
    /// how many wait for it where the backend knows. Reads only.
    ///
    /// # Errors
    ///
    /// [`crate::LockError::Unsupported`] on a driver without inspection
    /// ([`Capabilities::inspect`]), a bad key, or a backend error.
    pub async fn inspect(&self, key: impl Into<String>) -> Result<Inspection> {
        let key = LockKey::new(key.into())?;
        self.inner.driver.inspect(&key).await
    }

    /// The locks held now whose names start with `prefix`, each as
    /// [`inspect`](Locker::inspect) shows it, in name order, at most `limit`.
    ///
    /// # Errors
    ///
    /// [`crate::LockError::Unsupported`] on a driver that cannot list
    /// ([`Capabilities::list`]), or a backend error.
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), lockkit::LockError> {
    /// let locker = lockkit::Locker::new(Arc::new(lockkit::mem::MemDriver::new()));
    /// let _a = locker.try_lock("jobs/a").await?;
    /// let _b = locker.try_lock("other").await?;
    /// let held = locker.list("jobs/", 100).await?;
    /// assert_eq!(held.len(), 1);
    /// assert_eq!(held[0].key.as_str(), "jobs/a");
    /// # Ok(()) }
    /// ```
    pub async fn list(&self, prefix: &str, limit: usize) -> Result<Vec<Inspection>> {
        self.inner.driver.list_held(prefix, limit).await
    }

    /// Whether anyone holds `key` right now, by [`inspect`](Locker::inspect).
    ///
    /// # Errors
    ///
    /// As [`inspect`](Locker::inspect).
    pub async fn is_locked(&self, key: impl Into<String>) -> Result<bool> {
        Ok(self.inspect(key).await?.is_held())
    }

    pub(super) fn ensure_watchdog(&self) {
        self.inner.watchdog_started.get_or_init(|| {
            tokio::spawn(watchdog::run(
                Arc::downgrade(&self.inner),
                self.inner.watchdog_wake.clone(),
            ));
        });
        self.inner.watchdog_wake.notify_one();
    }
}
