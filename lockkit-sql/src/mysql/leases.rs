//! [`MySqlLeases`]: MySQL's side of [`super::MySqlDriver`] — the statements each
//! lease operation runs. MySQL has no release notification: waiters in other
//! processes wait on the key's bell ([`super::doorbell`]).

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::driver::Contention;
use lockkit_core::driver::{KeyWakers, LockMode};
use lockkit_core::{
    AcquireRequest, Capabilities, Grant, Inspection, LockError, LockKey, OwnerId, Result,
    async_trait,
};
use sqlx::AssertSqlSafe;
use sqlx::mysql::{MySql, MySqlPool};

use super::doorbell::Doorbells;
use super::{holder_sql, queue_sql, sql, waiting};
use crate::connect::Within;
use crate::holds::{HolderRow, KeyRow};
use crate::lease::{LeaseBackend, QUEUED_LEASE_CAPABILITIES, polling};
use crate::warm::{Warm, WarmConn, ran_to_end};

pub(super) const NAME: &str = "mysql";

pub(super) fn db_error(e: sqlx::Error) -> LockError {
    crate::error::db_error(NAME, e)
}

pub(super) fn ttl_us(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX / 2)
}

/// MySQL's side of [`super::MySqlDriver`]: its pool and statements.
#[derive(Debug)]
pub struct MySqlLeases {
    pub(super) pool: MySqlPool,
    /// The exclusive lease statements' connections, kept between statements.
    warm: Warm<MySql>,
    pub(super) statements: Statements,
    /// Wakes this driver's own waiters when it releases.
    wakers: KeyWakers,
    /// Each statement (`request_timeout_ms`).
    pub(super) timeout: Duration,
    /// How releases wake waiters in other processes.
    pub(super) doorbells: Doorbells,
}

/// Every statement, built once per driver.
#[derive(Debug)]
pub(super) struct Statements {
    pub(super) acquire: Arc<str>,
    pub(super) acquire_in_turn: Arc<str>,
    pub(super) take_free: Arc<str>,
    pub(super) extend: Arc<str>,
    proclaim: Arc<str>,
    list: Arc<str>,
    release: Arc<str>,
    pub(super) force_release: Arc<str>,
    purge: Arc<str>,
    pub(super) lock_key: Arc<str>,
    pub(super) create_key: Arc<str>,
    pub(super) holders: Arc<str>,
    pub(super) claim: Arc<str>,
    pub(super) insert_holder: Arc<str>,
    pub(super) forget_dead: Arc<str>,
    pub(super) extend_holder: Arc<str>,
    pub(super) release_holder: Arc<str>,
    pub(super) settle: Arc<str>,
    pub(super) forget_holders: Arc<str>,
    pub(super) inspect: Arc<str>,
    pub(super) enqueue: Arc<str>,
    pub(super) readers_queued: Arc<str>,
    pub(super) dequeue: Arc<str>,
    pub(super) live_queue: Arc<str>,
}

impl MySqlLeases {
    /// Statements on `table`, each bounded by `timeout`.
    pub(super) fn new(pool: MySqlPool, own: bool, table: &str, timeout: Duration) -> Self {
        Self {
            warm: Warm::new(pool.clone(), own),
            statements: Statements {
                acquire: sql::acquire(table).into(),
                acquire_in_turn: sql::acquire_in_turn(table).into(),
                take_free: sql::take_free(table).into(),
                extend: sql::extend(table).into(),
                proclaim: sql::proclaim(table).into(),
                list: sql::list(table).into(),
                release: sql::release(table).into(),
                force_release: sql::force_release(table).into(),
                purge: sql::purge(table).into(),
                lock_key: holder_sql::lock_key(table).into(),
                create_key: holder_sql::create_key(table).into(),
                holders: holder_sql::holders(table).into(),
                claim: holder_sql::claim(table).into(),
                insert_holder: holder_sql::insert_holder(table).into(),
                forget_dead: holder_sql::forget_dead(table).into(),
                extend_holder: holder_sql::extend_holder(table).into(),
                release_holder: holder_sql::release_holder(table).into(),
                settle: holder_sql::settle(table).into(),
                forget_holders: holder_sql::forget_holders(table).into(),
                inspect: holder_sql::inspect(table).into(),
                enqueue: queue_sql::enqueue(table).into(),
                readers_queued: queue_sql::readers_queued(table).into(),
                dequeue: queue_sql::dequeue(table).into(),
                live_queue: queue_sql::live_queue(table).into(),
            },
            wakers: KeyWakers::default(),
            doorbells: Doorbells::new(&pool, table, timeout),
            pool,
            timeout,
        }
    }

    /// Runs `statement`, bound to `key` and then `owner` if given: how many rows
    /// it changed.
    async fn run(
        &self,
        statement: &Arc<str>,
        key: &LockKey,
        owner: Option<&OwnerId>,
    ) -> Result<u64> {
        let mut query = sqlx::query(AssertSqlSafe(statement.clone())).bind(key.as_str());
        if let Some(owner) = owner {
            query = query.bind(owner.to_hex());
        }
        let done = query
            .execute(&self.pool)
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        Ok(done.rows_affected())
    }
}

impl MySqlLeases {
    /// Frees `owner`'s exclusive hold of `key`: whether it had one. The release
    /// statement reports whether a waiter first in line marked the key before
    /// it slept ([`sql::release`]); unless the hold kept a bell of its own
    /// (`rings`: it is rung after this), the holder of the key's bell is then
    /// woken on the same connection ([`Doorbells::wake_first_in_line`]). An
    /// uncontended release is the one statement.
    async fn release_exclusive(&self, key: &LockKey, owner: &OwnerId, rings: bool) -> Result<bool> {
        let mut conn = self.warm_conn().await?;
        let done = sqlx::query(AssertSqlSafe(self.statements.release.clone()))
            .bind(key.as_str())
            .bind(owner.to_hex())
            .execute(&mut *conn)
            .within(self.timeout)
            .await;
        let whole = ran_to_end(&done);
        let done = match done {
            Ok(done) => done,
            Err(e) => {
                conn.done(whole);
                return Err(db_error(e));
            }
        };
        let marked = done.last_insert_id() > 0;
        // The mark says someone may sleep; whom to wake is asked of the bell
        // itself, so that a stale mark (its sleeper gone, or a server restarted
        // since, whose connection ids start again) never kills another
        // client's statement. The wake-up's statements report no outcome: its
        // connection goes back through sqlx.
        if done.rows_affected() > 0 && marked && !rings {
            self.doorbells.wake_first_in_line(&mut conn, key).await;
        } else {
            conn.done(true);
        }
        Ok(done.rows_affected() > 0)
    }

    /// A warm connection ([`Warm`]), waited for at most the request timeout.
    async fn warm_conn(&self) -> Result<WarmConn<'_, MySql>> {
        self.warm
            .conn()
            .within(self.timeout)
            .await
            .map_err(db_error)
    }

    /// Wakes the waiter first in line on `key`'s bell, if the key is free
    /// ([`Doorbells::wake_first_in_line`]): after a release that did not run
    /// the release statement.
    async fn wake_first_in_line(&self, key: &LockKey) {
        match self.pool.acquire().within(self.timeout).await {
            Ok(mut conn) => self.doorbells.wake_first_in_line(&mut conn, key).await,
            Err(e) => tracing::debug!(error = %e, "MySQL doorbell: no connection to wake with"),
        }
    }
}

#[async_trait]
impl LeaseBackend for MySqlLeases {
    const NAME: &'static str = NAME;
    /// For the waiters that do not wait on a bell (shared, permits, and all when
    /// the bells' connections are used up): MySQL has no release notification.
    const POLL_CAP: Duration = Duration::from_millis(50);
    const QUEUES: bool = true;

    fn capabilities(&self) -> Capabilities {
        QUEUED_LEASE_CAPABILITIES
    }

    async fn try_acquire_all(&self, reqs: &[AcquireRequest]) -> Result<Option<Vec<Grant>>> {
        self.take_all(reqs).await
    }

    async fn enqueue(&self, req: &AcquireRequest) -> Result<()> {
        self.enqueue_row(req).await
    }

    async fn dequeue(&self, req: &AcquireRequest) -> Result<()> {
        self.dequeue_row(req).await
    }

    async fn inspect(&self, key: &LockKey) -> Result<Inspection> {
        self.inspect_with_waiters(key).await
    }

    fn wakers(&self) -> &KeyWakers {
        &self.wakers
    }

    /// An exclusive acquire that may wait waits on the key's bell; a fair one
    /// polls, in its place in the queue.
    fn contend_exclusive<'a>(&'a self, req: &'a AcquireRequest) -> Contention<'a> {
        if req.fair {
            return polling(self, req);
        }
        waiting::contention(self, req)
    }

    async fn try_acquire(&self, req: &AcquireRequest) -> Result<Option<Grant>> {
        if req.mode != LockMode::Exclusive {
            return self.try_acquire_many(req).await;
        }
        let mut conn = self.warm.conn().await.map_err(db_error)?;
        let taken = self.acquire_exclusive_on(&mut conn, req).await;
        // An error may have cut a statement short.
        conn.done(taken.is_ok());
        taken
    }

    async fn read_holds(&self, key: &LockKey) -> Result<(Option<KeyRow>, Vec<HolderRow>)> {
        self.read_rows(key).await
    }

    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<bool> {
        let mut conn = self.warm_conn().await?;
        let done = sqlx::query(AssertSqlSafe(self.statements.extend.clone()))
            .bind(ttl_us(ttl))
            .bind(key.as_str())
            .bind(owner.to_hex())
            .execute(&mut *conn)
            .within(self.timeout)
            .await;
        conn.done(ran_to_end(&done));
        let done = done.map_err(db_error)?;
        let ours = done.rows_affected() > 0 || self.extend_holder(key, owner, ttl_us(ttl)).await?;
        if !ours {
            // Lost: the next waiter need not wait for the release.
            self.doorbells.ring(key, owner).await;
        }
        Ok(ours)
    }

    async fn proclaim(&self, key: &LockKey, owner: &OwnerId, text: &str) -> Result<bool> {
        let done = sqlx::query(AssertSqlSafe(self.statements.proclaim.clone()))
            .bind(text)
            .bind(key.as_str())
            .bind(owner.to_hex())
            .execute(&self.pool)
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        Ok(done.rows_affected() > 0)
    }

    async fn list(&self, prefix: &str, limit: usize) -> Result<Vec<String>> {
        sqlx::query_scalar(AssertSqlSafe(self.statements.list.clone()))
            .bind(prefix.chars().count() as u64)
            .bind(prefix)
            .bind(limit as u64)
            .fetch_all(&self.pool)
            .within(self.timeout)
            .await
            .map_err(db_error)
    }

    /// Releases, then wakes the next waiter in another process: rings the bell
    /// kept with the hold (it waited for the lock), or else wakes the waiter
    /// first in line on the key's bell.
    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        let kept = self.doorbells.take_kept(key, owner);
        let released = match self.release_exclusive(key, owner, kept.is_some()).await {
            Ok(false) => {
                let released = self.release_holder(key, owner).await;
                if matches!(released, Ok(true)) {
                    self.wake_first_in_line(key).await;
                }
                released
            }
            other => other,
        };
        if let Some(bell) = kept {
            self.doorbells.ring_unkept(bell).await;
        }
        released
    }

    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        let freed = self.force_release_all(key).await?;
        if freed {
            self.wake_first_in_line(key).await;
        }
        Ok(freed)
    }

    async fn purge(&self, key: &LockKey) -> Result<()> {
        self.run(&self.statements.forget_holders, key, None).await?;
        self.run(&self.statements.purge, key, None).await.map(drop)
    }
}

#[cfg(test)]
mod tests;
