//! Session-bound locks (PostgreSQL advisory locks, MySQL `GET_LOCK`), opt-in with
//! `?mode=advisory` / `?mode=get_lock`.
//!
//! The lock belongs to a database session, so each hold keeps one pooled
//! connection for its whole life. What that means:
//!
//! - **No TTL.** The lock is freed when the holder releases it or its session ends
//!   (process death, network loss noticed by the server, `pg_terminate_backend`,
//!   `KILL`). A holder that is merely paused keeps it forever.
//! - **Loss detection** is the watchdog's renewal, which here checks that the
//!   session is alive (`SELECT 1` on the holding connection); `lost()` fires when it
//!   is not, or when the client-side lease passes without a successful check.
//! - **Fencing** comes from a `<table>_fences` counter bumped on the holding
//!   connection while the lock is held, so tokens strictly increase per key.
//! - **Semaphores** take one of `limit` backend locks, the key's slots `0..limit`,
//!   on the holding session. Each hold is recorded in `<table>_session_holds`
//!   (mode, limit, token, label, and the session) on its own connection; a record
//!   counts only while the backend shows that session holding that lock, so a
//!   dead session's record is ignored. Inspection and the limit check read them.
//! - One connection per held lock: size the pool for the locks you hold at once.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use lockkit_core::driver::Contention;
use lockkit_core::driver::{
    Admission, ChangeSignal, Holder, Inspection, KeyWakers, LockMode, admit, armed, limit_mismatch,
};
use lockkit_core::holds::HoldTable;
use lockkit_core::{
    AcquireRequest, Capabilities, FencingToken, Grant, LockDriver, LockError, LockKey, OwnerId,
    Result,
};
use sqlx::pool::PoolConnection;
use tokio::time::Instant;

use crate::mode_names::mode_of;
use crate::renew::not_ours;
use crate::wait::polled;

/// Which backend lock a hold took: the key's own (exclusive or shared), or one
/// slot of a semaphore.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Taken {
    Key,
    Slot(u32),
}

/// A live hold as the backend records it: mode, token, label.
pub(crate) type LiveHold = (LockMode, u64, Option<String>);

/// A `<table>_session_holds` row whose session holds its lock: mode, limit,
/// token, label, and the session `S` (a connection id, a backend pid).
pub(crate) type HoldRow<S> = (String, Option<i64>, i64, Option<String>, S);

/// The live hold a [`HoldRow`] records.
pub(crate) fn live_hold<S>((mode, limit, token, label, _): HoldRow<S>) -> LiveHold {
    (mode_of(&mode, limit), token as u64, label)
}

/// What a database provides for session locks.
#[async_trait]
pub(crate) trait SessionBackend: Send + Sync + fmt::Debug + 'static {
    type Db: sqlx::Database;

    fn name(&self) -> &'static str;
    fn pool(&self) -> &sqlx::Pool<Self::Db>;
    fn capabilities(&self) -> Capabilities;
    /// Wakes this driver's waiters and observers by key (fed by NOTIFY where
    /// there is one).
    fn wakers(&self) -> &KeyWakers;
    fn poll_cap(&self) -> Duration;
    /// Refuses a key that cannot name this backend's lock (with raw keys).
    fn check_key(&self, key: &LockKey) -> Result<()> {
        let _ = key;
        Ok(())
    }
    /// Tries the lock in `mode` on `conn` without waiting: which backend lock it
    /// took, if any.
    async fn try_lock(
        &self,
        conn: &mut PoolConnection<Self::Db>,
        key: &LockKey,
        mode: LockMode,
    ) -> Result<Option<Taken>, sqlx::Error>;
    /// Bumps and returns the key's fencing counter, and records the hold (its
    /// mode, the lock `taken`, the token and `label`), on the holding connection.
    async fn bump_fence(
        &self,
        conn: &mut PoolConnection<Self::Db>,
        key: &LockKey,
        mode: LockMode,
        taken: Taken,
        label: Option<&str>,
    ) -> Result<u64, sqlx::Error>;
    /// Gives the lock back (and forgets its record); false if this session did
    /// not hold it.
    async fn unlock(
        &self,
        conn: &mut PoolConnection<Self::Db>,
        key: &LockKey,
        mode: LockMode,
        taken: Taken,
    ) -> Result<bool, sqlx::Error>;
    /// The key's live holds, oldest first.
    async fn live_holds(&self, key: &LockKey) -> Result<Vec<LiveHold>, sqlx::Error>;
    /// Checks that the session is alive.
    async fn ping(&self, conn: &mut PoolConnection<Self::Db>) -> Result<(), sqlx::Error>;
    /// Ends whatever session holds `key`; true if there was one.
    async fn break_lock(&self, key: &LockKey) -> Result<bool, sqlx::Error>;
    /// Deletes the key's fencing counter (`purge`: throwaway keys only).
    async fn forget_fence(&self, key: &LockKey) -> Result<(), sqlx::Error>;
    /// Tells other drivers' waiters that `key` was released (NOTIFY); best effort.
    async fn announce_release(&self, key: &LockKey) {
        let _ = key;
    }
}

struct Hold<B: SessionBackend> {
    conn: tokio::sync::Mutex<Option<PoolConnection<B::Db>>>,
    token: FencingToken,
    mode: LockMode,
    taken: Taken,
}

/// A [`LockDriver`] over a [`SessionBackend`].
pub(crate) struct SessionDriver<B: SessionBackend> {
    backend: Arc<B>,
    held: Arc<HoldTable<Arc<Hold<B>>>>,
}

impl<B: SessionBackend> fmt::Debug for SessionDriver<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionDriver")
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

impl<B: SessionBackend> SessionDriver<B> {
    pub(crate) fn new(backend: B) -> Self {
        Self {
            backend: Arc::new(backend),
            held: Arc::default(),
        }
    }

    fn db_error(&self, e: sqlx::Error) -> LockError {
        crate::error::db_error(self.backend.name(), e)
    }

    fn held(&self, key: &LockKey, owner: &OwnerId) -> Option<Arc<Hold<B>>> {
        self.held.get(key, owner)
    }

    fn forget(&self, key: &LockKey, owner: &OwnerId) -> Option<Arc<Hold<B>>> {
        self.held.remove(key, owner)
    }

    /// Pings the holding session; on failure the hold is forgotten and its
    /// connection closed (the server frees the lock with the session).
    async fn check(&self, key: &LockKey, owner: &OwnerId) -> Result<FencingToken> {
        let Some(held) = self.held(key, owner) else {
            return Err(not_ours(key));
        };
        let mut conn = held.conn.lock().await;
        let alive = match conn.as_mut() {
            Some(c) => self.backend.ping(c).await.is_ok(),
            None => false,
        };
        if alive {
            return Ok(held.token);
        }
        if let Some(c) = conn.take() {
            drop(c.detach());
        }
        self.forget(key, owner);
        Err(LockError::lost(
            key,
            "the database session holding the lock ended",
        ))
    }

    async fn try_acquire(&self, req: &AcquireRequest) -> Result<Option<Grant>> {
        let sent = Instant::now();
        let grant = |token| Grant::of(req, token, sent + req.ttl);
        if let Some(own) = self.held(&req.key, &req.owner) {
            // A re-acquire by the holder: the same grant, if its mode covers it.
            let mine = lockkit_core::driver::Hold {
                owner: req.owner.as_u128(),
                mode: own.mode,
                token: own.token,
            };
            if let Admission::Refuse(e) = admit(self.backend.name(), req, &[mine], []) {
                return Err(e);
            }
            return self
                .check(&req.key, &req.owner)
                .await
                .map(|t| Some(grant(t)));
        }
        if let Some(limit) = req.mode.limit() {
            if let Admission::Refuse(e) = admit(self.backend.name(), req, &[], []) {
                return Err(e); // a limit of 0
            }
            let holds = self
                .backend
                .live_holds(&req.key)
                .await
                .map_err(|e| self.db_error(e))?;
            if let Some(theirs) = holds
                .iter()
                .find_map(|h| h.0.limit().filter(|l| *l != limit))
            {
                return Err(limit_mismatch(req, theirs, limit));
            }
        }
        let mut conn = self
            .backend
            .pool()
            .acquire()
            .await
            .map_err(|e| self.db_error(e))?;
        let taken = match self.backend.try_lock(&mut conn, &req.key, req.mode).await {
            Ok(Some(taken)) => taken,
            Ok(None) => return Ok(None),
            Err(e) => {
                // The server may have granted before the error: never return a
                // session that might hold a lock to the pool.
                drop(conn.detach());
                return Err(self.db_error(e));
            }
        };
        let label = req.stored_label();
        let fence = match self
            .backend
            .bump_fence(&mut conn, &req.key, req.mode, taken, label.as_deref())
            .await
        {
            Ok(f) => f,
            Err(e) => {
                // Never return a locked session to the pool: closing it frees the lock.
                drop(conn.detach());
                return Err(self.db_error(e));
            }
        };
        let token = FencingToken(fence);
        self.held.insert(
            req.key.clone(),
            req.owner.clone(),
            Arc::new(Hold {
                conn: tokio::sync::Mutex::new(Some(conn)),
                token,
                mode: req.mode,
                taken,
            }),
        );
        Ok(Some(grant(token)))
    }
}

#[async_trait]
impl<B: SessionBackend> LockDriver for SessionDriver<B> {
    fn name(&self) -> &'static str {
        self.backend.name()
    }

    fn capabilities(&self) -> Capabilities {
        self.backend.capabilities()
    }

    async fn contend<'a>(&'a self, req: &'a AcquireRequest) -> Result<Contention<'a>> {
        // Once, before waiting: a key is as valid on the last poll as on the first.
        self.backend.check_key(&req.key)?;
        let wake = self.backend.wakers().notify(req.key.as_str());
        Ok(polled(wake, self.backend.poll_cap(), move || {
            self.try_acquire(req)
        }))
    }

    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant> {
        let sent = Instant::now();
        self.check(key, owner).await?;
        Ok(sent + ttl)
    }

    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        let Some(held) = self.forget(key, owner) else {
            return Ok(false);
        };
        let Some(mut conn) = held.conn.lock().await.take() else {
            return Ok(false);
        };
        match self
            .backend
            .unlock(&mut conn, key, held.mode, held.taken)
            .await
        {
            Ok(true) => {
                drop(conn);
                self.backend.wakers().wake(key.as_str());
                self.backend.announce_release(key).await;
                Ok(true)
            }
            // The session lost the lock (or died): make sure it is gone for good.
            Ok(false) | Err(_) => {
                drop(conn.detach());
                Ok(false)
            }
        }
    }

    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        let broken = self
            .backend
            .break_lock(key)
            .await
            .map_err(|e| self.db_error(e))?;
        self.backend.wakers().wake(key.as_str());
        self.backend.announce_release(key).await;
        Ok(broken)
    }

    async fn watch(&self, key: &LockKey) -> Result<ChangeSignal> {
        // Releases wake this driver's waiters of the key (PostgreSQL: every
        // driver's, by NOTIFY); an observer waits on the same signal.
        Ok(armed(self.backend.wakers().notify(key.as_str())))
    }

    async fn inspect(&self, key: &LockKey) -> Result<Inspection> {
        let holds = self
            .backend
            .live_holds(key)
            .await
            .map_err(|e| self.db_error(e))?;
        let holders = holds
            .into_iter()
            .map(|(mode, token, label)| Holder::new(mode, FencingToken(token)).with_label(label))
            .collect();
        Ok(Inspection::free(key.clone()).with_holders(holders))
    }

    async fn purge(&self, key: &LockKey) -> Result<()> {
        self.force_release(key).await?;
        self.backend
            .forget_fence(key)
            .await
            .map_err(|e| self.db_error(e))
    }
}
