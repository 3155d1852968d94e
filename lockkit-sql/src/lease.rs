//! [`LeaseDriver`]: the one lease-table driver of every SQL database, over a
//! [`LeaseBackend`] that holds the database's own statements and wake-up (the
//! lease-table counterpart of `session.rs`).
//!
//! What every database shares lives here once: the wait loop around the acquiring
//! statement, a renewal that finds the row gone being [`LockError::Lost`], batched
//! or one-by-one renewals, and waking this driver's own waiters on a release.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use lockkit_core::driver::{ChangeSignal, Contention, Inspect, KeyWakers, armed};
use lockkit_core::{
    AcquireRequest, Capabilities, Grant, Inspection, LockDriver, LockError, LockKey, LockMode,
    OwnerId, Renewal, Result, Wait, async_trait, renew_in_batches,
};
use tokio::time::Instant;

use crate::holds::{self, HolderRow, KeyRow};
use crate::renew;
use crate::turns;
use crate::wait::polled_then;

/// What a database provides for the lease table: each operation as its own
/// statements, answering whether it took effect.
#[async_trait]
pub trait LeaseBackend: Send + Sync + fmt::Debug + 'static {
    /// The driver's name in messages (`"postgres"`).
    const NAME: &'static str;
    /// The longest pause between a waiter's attempts when no wake-up comes.
    const POLL_CAP: Duration;
    /// Whether [`Self::extend_batch`] renews many holds in one statement; if not,
    /// holds are renewed one [`Self::extend`] at a time.
    const BATCH_RENEWALS: bool = false;
    /// Whether waiting acquires queue in `<table>_queue` ([`crate::turns`]):
    /// [`Self::enqueue`] and [`Self::dequeue`] are then the database's.
    const QUEUES: bool = false;
    /// Whether a release wakes this driver's waiters of its key at once. Not on
    /// PostgreSQL, whose release statements send the NOTIFY that wakes the
    /// key's waiters in every driver, this one's included (of its queued
    /// exclusive waiters, only the one the release names).
    const WAKE_ON_RELEASE: bool = true;

    /// What the database supports.
    fn capabilities(&self) -> Capabilities;

    /// Whether every release of a key wakes this driver's waiters of it
    /// (PostgreSQL with its listener): then they poll only in case a wake-up
    /// was lost ([`crate::wait::fallback_policy`]).
    fn notified(&self) -> bool {
        false
    }

    /// Wakes this driver's waiters and observers, by key.
    fn wakers(&self) -> &KeyWakers;

    /// One acquire attempt: the grant, or `None` when the key is held.
    async fn try_acquire(&self, req: &AcquireRequest) -> Result<Option<Grant>>;

    /// An attempt after a wake-up or a pause. Databases whose shared and permit
    /// acquires lock the key row first override it to look without locking
    /// first ([`Self::looks_full`]): a release wakes every waiter of the key, and those
    /// that cannot get in then cost one read each, run side by side, instead of
    /// a transaction each, one after another on the key row.
    async fn try_acquire_again(&self, req: &AcquireRequest) -> Result<Option<Grant>> {
        if self.looks_full(req).await? {
            return Ok(None);
        }
        self.try_acquire(req).await
    }

    /// The attempts of `req`, an exclusive acquire willing to wait: by default
    /// [`polling`]. MySQL overrides it to wait on a bell, PostgreSQL to wait in
    /// the key's queue. Every other acquire is polling.
    fn contend_exclusive<'a>(&'a self, req: &'a AcquireRequest) -> Contention<'a> {
        polling(self, req)
    }

    /// Queues `req`, a waiting acquire just refused, in its key's queue, or
    /// pushes its row out ([`crate::turns`]). Only where [`Self::QUEUES`].
    async fn enqueue(&self, req: &AcquireRequest) -> Result<()> {
        let _ = req;
        Ok(())
    }

    /// Exclusive holds of every key of `reqs`, all or none, in one request
    /// ([`LockDriver::try_acquire_all`]). Only where the database's capabilities
    /// say [`Capabilities::several_keys_at_once`].
    async fn try_acquire_all(&self, reqs: &[AcquireRequest]) -> Result<Option<Vec<Grant>>> {
        let _ = reqs;
        Err(LockError::Unsupported {
            driver: Self::NAME,
            capability: "several keys in one request",
        })
    }

    /// Takes `req`'s row out of its key's queue: it was granted, or gave up.
    async fn dequeue(&self, req: &AcquireRequest) -> Result<()> {
        let _ = req;
        Ok(())
    }

    /// Tells the database that an observer of `key` wants its releases
    /// signalled, before the observer reads the key (PostgreSQL notifies only
    /// then).
    async fn watching(&self, key: &LockKey) -> Result<()> {
        let _ = key;
        Ok(())
    }

    /// Whether a read without locks shows that `req` must wait (a shared hold or
    /// permit only; the real attempt decides).
    async fn looks_full(&self, req: &AcquireRequest) -> Result<bool> {
        if req.mode == LockMode::Exclusive {
            return Ok(false);
        }
        let (row, many) = self.read_holds(&req.key).await?;
        Ok(holds::must_wait(Self::NAME, req, row.as_ref(), &many))
    }

    /// The key row and its holders rows, read in one snapshot without locks
    /// (see [`crate::holds`]).
    async fn read_holds(&self, key: &LockKey) -> Result<(Option<KeyRow>, Vec<HolderRow>)>;

    /// Pushes out `owner`'s live lease on `key`; false if it is not theirs.
    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<bool>;

    /// Pushes out every lease of `batch` (all of `ttl`) in one statement: which
    /// were renewed. Only called when [`Self::BATCH_RENEWALS`] says so.
    async fn extend_batch(&self, ttl: Duration, batch: &[Renewal]) -> Result<Vec<bool>> {
        let _ = (ttl, batch);
        Err(LockError::Unsupported {
            driver: Self::NAME,
            capability: "batch renewal",
        })
    }

    /// Stores `text` (label and election value) on `owner`'s live exclusive hold
    /// of `key`; false if it is not theirs.
    async fn proclaim(&self, key: &LockKey, owner: &OwnerId, text: &str) -> Result<bool>;

    /// The names of the live keys starting with `prefix`, in order, at most
    /// `limit`.
    async fn list(&self, prefix: &str, limit: usize) -> Result<Vec<String>>;

    /// Frees `owner`'s live hold on `key`; whether it held it.
    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool>;

    /// Frees `key` whoever holds it; whether anyone did.
    async fn force_release(&self, key: &LockKey) -> Result<bool>;

    /// Deletes every trace of `key`, its fencing counter included.
    async fn purge(&self, key: &LockKey) -> Result<()>;

    /// Who holds `key`.
    async fn inspect(&self, key: &LockKey) -> Result<Inspection> {
        let (row, many) = self.read_holds(key).await?;
        Ok(holds::inspection(key, row.as_ref(), &many))
    }
}

/// What every lease table offers: every mode, inspection of holders,
/// elections and listing; polled waiters, in no order. A database adds how it
/// wakes them.
pub(crate) const LEASE_CAPABILITIES: Capabilities = Capabilities::baseline()
    .with_shared(true)
    .with_permits(true)
    .with_inspect(Inspect::Holders)
    .with_proclaim(true)
    .with_list(true)
    .with_transaction_locks(true);

/// A lease table whose waiters queue ([`crate::turns`]): counted, fair on
/// request, and several free keys taken in one transaction.
pub(crate) const QUEUED_LEASE_CAPABILITIES: Capabilities = LEASE_CAPABILITIES
    .with_inspect(Inspect::HoldersAndWaiters)
    .with_fair_on_request(true)
    .with_several_keys_at_once(true);

/// An attempt's answer, where [`LockError::Contended`] (a deadlock or a
/// serialization failure with another transaction: nothing took effect) means
/// busy: `None`, attempt again.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn busy_as_none(answer: Result<Option<Grant>>) -> Result<Option<Grant>> {
    match answer {
        Err(LockError::Contended { .. }) => Ok(None),
        other => other,
    }
}

/// The attempts of `req` by `backend`, woken by its
/// [`wakers`](LeaseBackend::wakers) for its key (its own releases; PostgreSQL's
/// NOTIFY), polling otherwise.
pub(crate) fn polling<'a, B: LeaseBackend + ?Sized>(
    backend: &'a B,
    req: &'a AcquireRequest,
) -> Contention<'a> {
    let wake = backend.wakers().notify(req.key.as_str());
    let queues = B::QUEUES && !matches!(req.wait, Wait::NoWait);
    // When this waiter's queue row was last written: shared by the attempts
    // and the give-up.
    let queued = Arc::new(std::sync::Mutex::new(None::<Instant>));
    let left = queued.clone();
    let mut first = true;
    let policy = match backend.notified() {
        true => crate::wait::fallback_policy(B::POLL_CAP),
        false => crate::wait::policy(B::POLL_CAP),
    };
    polled_then(
        wake,
        policy,
        move || {
            let again = !std::mem::replace(&mut first, false);
            let queued = queued.clone();
            async move {
                let granted = if again {
                    backend.try_acquire_again(req).await?
                } else {
                    backend.try_acquire(req).await?
                };
                if !queues {
                    return Ok(granted);
                }
                let written = *lockkit_core::sync::lock(&queued);
                match (&granted, written) {
                    (Some(_), Some(_)) => {
                        *lockkit_core::sync::lock(&queued) = None;
                        // The grant stands: a row left behind only lapses.
                        if let Err(e) = backend.dequeue(req).await {
                            tracing::debug!(error = %e, "could not leave the queue; the row lapses");
                        }
                    }
                    (None, Some(at)) if at.elapsed() < turns::REFRESH => {}
                    (None, _) => {
                        backend.enqueue(req).await?;
                        *lockkit_core::sync::lock(&queued) = Some(Instant::now());
                    }
                    (Some(_), None) => {}
                }
                Ok(granted)
            }
        },
        move || {
            let left = left.clone();
            async move {
                if lockkit_core::sync::lock(&left).take().is_some()
                    && let Err(e) = backend.dequeue(req).await
                {
                    tracing::debug!(error = %e, "could not leave the queue; the row lapses");
                }
            }
        },
    )
}

/// A lease-table [`LockDriver`]: the one driver behind
/// [`PgDriver`](crate::postgres::PgDriver), [`MySqlDriver`](crate::mysql::MySqlDriver)
/// and [`SqliteDriver`](crate::sqlite::SqliteDriver), each a `LeaseDriver` over its
/// database's side (as sqlx's `PgPool` is a `Pool<Postgres>`). Clones share the
/// connection pool (and PostgreSQL's listener, which stops with the last clone).
pub struct LeaseDriver<B: LeaseBackend> {
    backend: Arc<B>,
}

impl<B: LeaseBackend> Clone for LeaseDriver<B> {
    fn clone(&self) -> Self {
        Self {
            backend: self.backend.clone(),
        }
    }
}

impl<B: LeaseBackend> fmt::Debug for LeaseDriver<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseDriver")
            .field("backend", &self.backend)
            .finish()
    }
}

impl<B: LeaseBackend> LeaseDriver<B> {
    /// The driver over `backend`.
    pub(crate) fn new(backend: B) -> Self {
        Self {
            backend: Arc::new(backend),
        }
    }

    /// The database's side.
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    pub(crate) fn backend(&self) -> &B {
        &self.backend
    }

    fn wake_waiters(&self, key: &LockKey) {
        if B::WAKE_ON_RELEASE {
            self.backend.wakers().wake(key.as_str());
        }
    }
}

#[async_trait]
impl<B: LeaseBackend> LockDriver for LeaseDriver<B> {
    fn name(&self) -> &'static str {
        B::NAME
    }

    fn capabilities(&self) -> Capabilities {
        self.backend.capabilities()
    }

    async fn contend<'a>(&'a self, req: &'a AcquireRequest) -> Result<Contention<'a>> {
        Ok(
            if req.mode == LockMode::Exclusive && !matches!(req.wait, Wait::NoWait) {
                self.backend.contend_exclusive(req)
            } else {
                polling(&*self.backend, req)
            },
        )
    }

    async fn try_acquire_all(&self, reqs: &[AcquireRequest]) -> Result<Option<Vec<Grant>>> {
        self.backend.try_acquire_all(reqs).await
    }

    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant> {
        let sent = Instant::now();
        if !self.backend.extend(key, owner, ttl).await? {
            return Err(renew::not_ours(key));
        }
        Ok(sent + ttl)
    }

    async fn extend_many(&self, renewals: &[Renewal]) -> Vec<Result<Instant>> {
        if !B::BATCH_RENEWALS {
            let mut out = Vec::with_capacity(renewals.len());
            for r in renewals {
                out.push(self.extend(&r.key, &r.owner, r.ttl).await);
            }
            return out;
        }
        renew_in_batches(
            B::NAME,
            renewals,
            renew::MAX_BATCH,
            |ttl, batch| async move { self.backend.extend_batch(ttl, &batch).await },
        )
        .await
    }

    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        let released = self.backend.release(key, owner).await?;
        if released {
            self.wake_waiters(key);
        }
        Ok(released)
    }

    async fn proclaim(&self, key: &LockKey, owner: &OwnerId, text: &str) -> Result<()> {
        if self.backend.proclaim(key, owner, text).await? {
            Ok(())
        } else {
            Err(renew::not_ours(key))
        }
    }

    async fn list(&self, prefix: &str, limit: usize) -> Result<Vec<LockKey>> {
        let names = self.backend.list(prefix, limit).await?;
        Ok(names
            .into_iter()
            .filter_map(|n| LockKey::new(n).ok())
            .collect())
    }

    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        let freed = self.backend.force_release(key).await?;
        self.wake_waiters(key);
        Ok(freed)
    }

    async fn watch(&self, key: &LockKey) -> Result<ChangeSignal> {
        // Releases wake this driver's waiters of the key (PostgreSQL: every
        // driver's, by NOTIFY); an observer waits on the same signal, armed
        // before the database learns of it.
        let signal = armed(self.backend.wakers().notify(key.as_str()));
        self.backend.watching(key).await?;
        Ok(signal)
    }

    async fn inspect(&self, key: &LockKey) -> Result<Inspection> {
        self.backend.inspect(key).await
    }

    async fn purge(&self, key: &LockKey) -> Result<()> {
        self.backend.purge(key).await
    }
}
