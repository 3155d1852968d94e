//! [`SqliteLeases`]: SQLite's side of [`super::SqliteDriver`] — the statements each
//! lease operation runs on the key table; shared holds and permits are in
//! [`super::many`].

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::driver::{KeyWakers, LockMode};
use lockkit_core::{
    AcquireRequest, Capabilities, FencingToken, Grant, Inspection, LockError, LockKey, OwnerId,
    Renewal, Result, async_trait,
};
use sqlx::sqlite::SqlitePool;
use sqlx::{AssertSqlSafe, Sqlite, Transaction};
use tokio::time::Instant;

use super::clock::{Reading, monotonic_ms};
use super::sql::{self, Statements};
use crate::holds::{self, HolderRow, KeyRow};
use crate::lease::{LeaseBackend, QUEUED_LEASE_CAPABILITIES};
use crate::{mode_names, renew, turns};

pub(super) const NAME: &str = "sqlite";

/// SQLite's side of [`super::SqliteDriver`]: its pool and statements.
#[derive(Debug)]
pub struct SqliteLeases {
    pub(super) pool: SqlitePool,
    pub(super) statements: Statements,
    /// Wakes waiters in this process when a driver of this process releases.
    local_wake: Arc<KeyWakers>,
}

pub(super) fn db_error(e: sqlx::Error) -> LockError {
    crate::error::db_error(NAME, e)
}

impl SqliteLeases {
    /// The statements on `table`; `local_wake` wakes this process's waiters.
    pub(super) fn new(pool: SqlitePool, table: &str, local_wake: Arc<KeyWakers>) -> Self {
        Self {
            pool,
            statements: Statements::new(table),
            local_wake,
        }
    }

    /// One exclusive upsert of `req` ([`sql::acquire`]) on `conn`, its lease
    /// counted from `sent`: the grant, or `None` if the key is someone else's
    /// or not our turn.
    pub(super) async fn take_exclusive<'c>(
        &self,
        conn: impl sqlx::Executor<'c, Database = Sqlite>,
        req: &AcquireRequest,
        sent: Instant,
    ) -> Result<Option<Grant>> {
        let now = Reading::now();
        let fence: Option<i64> = sqlx::query_scalar(AssertSqlSafe(self.statements.acquire.clone()))
            .bind(req.key.as_str())
            .bind(req.owner.to_hex())
            .bind(now.expiry(req.ttl))
            .bind(now.ms())
            .bind(req.stored_label())
            .bind(i64::from(req.fair))
            .fetch_optional(conn)
            .await
            .map_err(db_error)?;
        Ok(fence.map(|f| Grant::of(req, FencingToken(f as u64), sent + req.ttl)))
    }

    /// A write transaction, holding SQLite's write lock from its start (so that
    /// what it reads is what it decides on: invariant S1).
    pub(super) async fn begin_write(&self) -> Result<Transaction<'static, Sqlite>> {
        self.pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(db_error)
    }

    /// Runs one batch renewal `statement` (of [`sql::extend_many`]'s shape): which
    /// of `batch` it renewed.
    async fn renew_batch(
        &self,
        statement: String,
        now: i64,
        expires: i64,
        batch: &[Renewal],
    ) -> Result<Vec<bool>> {
        let mut q = sqlx::query_as::<_, (String, String)>(AssertSqlSafe(statement))
            .bind(expires)
            .bind(now);
        for r in batch {
            q = q.bind(r.key.as_str()).bind(r.owner.to_hex());
        }
        let rows = q.fetch_all(&self.pool).await.map_err(db_error)?;
        Ok(renew::renewed_flags(batch, rows))
    }
}

#[async_trait]
impl LeaseBackend for SqliteLeases {
    const NAME: &'static str = NAME;
    /// Bounds hand-off latency across processes (waiters in the releasing process
    /// are woken at once; invariant S4).
    const POLL_CAP: Duration = Duration::from_millis(50);
    const BATCH_RENEWALS: bool = true;
    const QUEUES: bool = true;

    fn capabilities(&self) -> Capabilities {
        QUEUED_LEASE_CAPABILITIES
    }

    async fn try_acquire_all(&self, reqs: &[AcquireRequest]) -> Result<Option<Vec<Grant>>> {
        self.take_all(reqs).await
    }

    async fn enqueue(&self, req: &AcquireRequest) -> Result<()> {
        let now = Reading::now();
        sqlx::query(AssertSqlSafe(self.statements.enqueue.clone()))
            .bind(req.key.as_str())
            .bind(req.owner.to_hex())
            .bind(mode_names::mode_name(req.mode))
            .bind(now.expiry(turns::LIFETIME))
            .execute(&self.pool)
            .await
            .map(drop)
            .map_err(db_error)
    }

    async fn dequeue(&self, req: &AcquireRequest) -> Result<()> {
        sqlx::query(AssertSqlSafe(self.statements.dequeue.clone()))
            .bind(req.key.as_str())
            .bind(req.owner.to_hex())
            .bind(monotonic_ms())
            .execute(&self.pool)
            .await
            .map(drop)
            .map_err(db_error)
    }

    async fn inspect(&self, key: &LockKey) -> Result<Inspection> {
        let (row, many, queue) = self.read_rows(key).await?;
        Ok(holds::inspection(key, row.as_ref(), &many).with_waiters(queue.len()))
    }

    fn wakers(&self) -> &KeyWakers {
        &self.local_wake
    }

    async fn try_acquire(&self, req: &AcquireRequest) -> Result<Option<Grant>> {
        if req.mode != LockMode::Exclusive {
            return self.try_acquire_many(req).await;
        }
        self.take_exclusive(&self.pool, req, Instant::now()).await
    }

    async fn read_holds(&self, key: &LockKey) -> Result<(Option<KeyRow>, Vec<HolderRow>)> {
        let (row, many, _) = self.read_rows(key).await?;
        Ok((row, many))
    }

    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<bool> {
        let now = Reading::now();
        let done = sqlx::query(AssertSqlSafe(self.statements.extend.clone()))
            .bind(key.as_str())
            .bind(owner.to_hex())
            .bind(now.expiry(ttl))
            .bind(now.ms())
            .execute(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(done.rows_affected() > 0 || self.extend_many_holder(key, owner, ttl).await?)
    }

    async fn proclaim(&self, key: &LockKey, owner: &OwnerId, text: &str) -> Result<bool> {
        let done = sqlx::query(AssertSqlSafe(self.statements.proclaim.clone()))
            .bind(key.as_str())
            .bind(owner.to_hex())
            .bind(text)
            .bind(monotonic_ms())
            .execute(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(done.rows_affected() > 0)
    }

    async fn list(&self, prefix: &str, limit: usize) -> Result<Vec<String>> {
        sqlx::query_scalar(AssertSqlSafe(self.statements.list.clone()))
            .bind(monotonic_ms())
            .bind(prefix.chars().count() as i64)
            .bind(prefix)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(db_error)
    }

    async fn extend_batch(&self, ttl: Duration, batch: &[Renewal]) -> Result<Vec<bool>> {
        let table = &self.statements.table;
        let reading = Reading::now();
        let (now, expires) = (reading.ms(), reading.expiry(ttl));
        let statement = sql::extend_many(table, batch.len());
        let mut renewed = self.renew_batch(statement, now, expires, batch).await?;
        // What the key table did not renew may be shared holds or permits.
        let rest: Vec<usize> = (0..batch.len()).filter(|i| !renewed[*i]).collect();
        if rest.is_empty() {
            return Ok(renewed);
        }
        // Each in a write transaction of its own (`extend_many_holder`).
        for i in rest {
            let hold = &batch[i];
            renewed[i] = self.extend_many_holder(&hold.key, &hold.owner, ttl).await?;
        }
        Ok(renewed)
    }

    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        let done = sqlx::query(AssertSqlSafe(self.statements.release.clone()))
            .bind(key.as_str())
            .bind(owner.to_hex())
            .bind(monotonic_ms())
            .execute(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(done.rows_affected() > 0 || self.release_many_holder(key, owner).await?)
    }

    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let done = sqlx::query(AssertSqlSafe(self.statements.force_release.clone()))
            .bind(key.as_str())
            .bind(monotonic_ms())
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        sqlx::query(AssertSqlSafe(self.statements.forget_holders.clone()))
            .bind(key.as_str())
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(done.rows_affected() > 0)
    }

    async fn purge(&self, key: &LockKey) -> Result<()> {
        let mut tx = self.begin_write().await?;
        for statement in [&self.statements.purge, &self.statements.forget_holders] {
            sqlx::query(AssertSqlSafe(statement.clone()))
                .bind(key.as_str())
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
        }
        tx.commit().await.map_err(db_error)
    }
}
