//! [`PgLeases`]: PostgreSQL's side of [`super::PgDriver`] — the statements each
//! lease operation runs, and the wake-up its listener feeds.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::driver::{Inspect, KeyWakers, LockMode};
use lockkit_core::{
    AcquireRequest, Capabilities, FencingToken, Grant, LockError, LockKey, OwnerId, Renewal,
    Result, WakeUp, async_trait,
};
use sqlx::AssertSqlSafe;
use sqlx::postgres::PgPool;
use tokio::time::Instant;

use super::listen::Listener;
use super::queue::{self, Wakeups};
use super::{holder_sql, sql, waiter_sql};
use crate::connect::Within;
use crate::holds::{HolderRow, KeyRow};
use crate::lease::LeaseBackend;
use crate::renew;

pub(crate) const NAME: &str = "postgres";

pub(super) fn db_error(e: sqlx::Error) -> LockError {
    crate::error::db_error(NAME, e)
}

pub(super) fn ttl_ms(ttl: Duration) -> f64 {
    ttl.as_secs_f64() * 1000.0
}

/// PostgreSQL's side of [`super::PgDriver`]: its pool, statements and listener.
#[derive(Debug)]
pub struct PgLeases {
    pub(super) pool: PgPool,
    pub(super) statements: Statements,
    pub(super) wakeups: Arc<Wakeups>,
    _listener: Listener,
    /// Each statement (`request_timeout_ms`).
    pub(super) timeout: Duration,
}

/// Which exclusive attempt [`PgLeases::take`] runs: its statement, and the
/// parameters that statement adds.
pub(super) enum Take<'a> {
    /// The plain upsert ([`sql::acquire`]).
    First,
    /// A waiter's later attempt, which looks first ([`sql::acquire_if_free`]).
    Again,
    /// Joining the queue as this waiter ([`waiter_sql::join_queue`]).
    Join(&'a str),
    /// This queued waiter's attempt ([`waiter_sql::acquire_queued`]).
    Queued(&'a str),
}

/// Every statement, built once per driver.
#[derive(Debug)]
pub(super) struct Statements {
    acquire: Arc<str>,
    acquire_if_free: Arc<str>,
    join_queue: Arc<str>,
    acquire_queued: Arc<str>,
    pub(super) requeue: Arc<str>,
    pub(super) dequeue: Arc<str>,
    pub(super) extend: Arc<str>,
    proclaim: Arc<str>,
    list: Arc<str>,
    extend_many: Arc<str>,
    release: Arc<str>,
    pub(super) force_release: Arc<str>,
    purge: Arc<str>,
    pub(super) lock_key: Arc<str>,
    pub(super) live_holders: Arc<str>,
    pub(super) grant: Arc<str>,
    pub(super) release_holder: Arc<str>,
    pub(super) inspect: Arc<str>,
    pub(super) channel: String,
}

impl PgLeases {
    /// Runs the exclusive attempt `which` for `req`: the grant, or `None`.
    pub(super) async fn take(
        &self,
        req: &AcquireRequest,
        which: Take<'_>,
    ) -> Result<Option<Grant>> {
        let statements = &self.statements;
        let statement = match which {
            Take::First => &statements.acquire,
            Take::Again => &statements.acquire_if_free,
            Take::Join(_) => &statements.join_queue,
            Take::Queued(_) => &statements.acquire_queued,
        };
        let sent = Instant::now();
        let mut query = sqlx::query_scalar(AssertSqlSafe(statement.clone()))
            .bind(req.key.as_str())
            .bind(req.owner.to_hex())
            .bind(ttl_ms(req.ttl))
            .bind(req.stored_label());
        match which {
            Take::First | Take::Again => {}
            Take::Join(waiter) => query = query.bind(waiter).bind(ttl_ms(queue::ROW_TTL)),
            Take::Queued(waiter) => query = query.bind(waiter),
        }
        let fence: Option<i64> = query
            .fetch_optional(&self.pool)
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        Ok(fence.map(|f| Grant::of(req, FencingToken(f as u64), sent + req.ttl)))
    }

    /// Statements on `table`, releases notified on `channel`, waiters woken by
    /// `wakeups` (which `listener` feeds).
    pub(super) fn new(
        pool: PgPool,
        table: &str,
        channel: String,
        wakeups: Arc<Wakeups>,
        listener: Listener,
        timeout: Duration,
    ) -> Self {
        Self {
            pool,
            statements: Statements {
                acquire: sql::acquire(table).into(),
                acquire_if_free: sql::acquire_if_free(table).into(),
                join_queue: waiter_sql::join_queue(table).into(),
                acquire_queued: waiter_sql::acquire_queued(table).into(),
                requeue: waiter_sql::requeue(table).into(),
                dequeue: waiter_sql::dequeue(table).into(),
                extend: sql::extend(table).into(),
                proclaim: sql::proclaim(table).into(),
                list: sql::list(table).into(),
                extend_many: sql::extend_many(table).into(),
                release: sql::release(table).into(),
                force_release: sql::force_release(table).into(),
                purge: sql::purge(table).into(),
                lock_key: holder_sql::lock_key(table).into(),
                live_holders: holder_sql::live_holders(table).into(),
                grant: holder_sql::grant(table).into(),
                release_holder: holder_sql::release_holder(table).into(),
                inspect: holder_sql::inspect(table).into(),
                channel,
            },
            wakeups,
            _listener: listener,
            timeout,
        }
    }
}

#[async_trait]
impl LeaseBackend for PgLeases {
    const NAME: &'static str = NAME;
    /// No NOTIFY arrived (a lost one, a broken listener): poll.
    const POLL_CAP: Duration = Duration::from_millis(250);
    const BATCH_RENEWALS: bool = true;
    const WAKE_ON_RELEASE: bool = false;

    fn capabilities(&self) -> Capabilities {
        Capabilities::baseline()
            .with_shared(true)
            .with_permits(true)
            .with_inspect(Inspect::Holders)
            .with_proclaim(true)
            .with_list(true)
            .with_wake_up(WakeUp::Notify)
            .with_watch(true)
    }

    fn wakers(&self) -> &KeyWakers {
        &self.wakeups.all
    }

    /// An exclusive acquire that waits joins the key's queue ([`queue`]).
    async fn wait_exclusive(&self, req: &AcquireRequest) -> Result<Grant> {
        queue::acquire(self, req).await
    }

    async fn try_acquire(&self, req: &AcquireRequest) -> Result<Option<Grant>> {
        if req.mode != LockMode::Exclusive {
            return self.try_acquire_many(req).await;
        }
        self.take(req, Take::First).await
    }

    /// A waiter's next exclusive attempt looks before it locks
    /// ([`sql::acquire_if_free`]): a refused attempt then costs the server no row
    /// lock and no transaction id.
    async fn try_acquire_again(&self, req: &AcquireRequest) -> Result<Option<Grant>> {
        if req.mode != LockMode::Exclusive {
            if self.looks_full(req).await? {
                return Ok(None);
            }
            return self.try_acquire_many(req).await;
        }
        self.take(req, Take::Again).await
    }

    async fn read_holds(&self, key: &LockKey) -> Result<(Option<KeyRow>, Vec<HolderRow>)> {
        self.read_rows(key).await
    }

    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<bool> {
        let renewed: i64 = sqlx::query_scalar(AssertSqlSafe(self.statements.extend.clone()))
            .bind(key.as_str())
            .bind(owner.to_hex())
            .bind(ttl_ms(ttl))
            .fetch_one(&self.pool)
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        Ok(renewed > 0)
    }

    async fn proclaim(&self, key: &LockKey, owner: &OwnerId, text: &str) -> Result<bool> {
        let done = sqlx::query(AssertSqlSafe(self.statements.proclaim.clone()))
            .bind(key.as_str())
            .bind(owner.to_hex())
            .bind(text)
            .execute(&self.pool)
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        Ok(done.rows_affected() > 0)
    }

    async fn list(&self, prefix: &str, limit: usize) -> Result<Vec<String>> {
        sqlx::query_scalar(AssertSqlSafe(self.statements.list.clone()))
            .bind(i32::try_from(prefix.chars().count()).unwrap_or(i32::MAX))
            .bind(prefix)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .within(self.timeout)
            .await
            .map_err(db_error)
    }

    async fn extend_batch(&self, ttl: Duration, batch: &[Renewal]) -> Result<Vec<bool>> {
        let names: Vec<&str> = batch.iter().map(|r| r.key.as_str()).collect();
        let owners: Vec<String> = batch.iter().map(|r| r.owner.to_hex()).collect();
        let rows = sqlx::query_as::<_, (String, String)>(AssertSqlSafe(
            self.statements.extend_many.clone(),
        ))
        .bind(ttl_ms(ttl))
        .bind(&names)
        .bind(&owners)
        .fetch_all(&self.pool)
        .within(self.timeout)
        .await
        .map_err(db_error)?;
        Ok(renew::renewed_flags(batch, rows))
    }

    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        let freed: i64 = sqlx::query_scalar(AssertSqlSafe(self.statements.release.clone()))
            .bind(key.as_str())
            .bind(owner.to_hex())
            .bind(&self.statements.channel)
            .fetch_one(&self.pool)
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        Ok(freed > 0 || self.release_holder(key, owner).await?)
    }

    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        self.force_release_all(key).await
    }

    async fn purge(&self, key: &LockKey) -> Result<()> {
        sqlx::query(AssertSqlSafe(self.statements.purge.clone()))
            .bind(key.as_str())
            .execute(&self.pool)
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        Ok(())
    }
}
