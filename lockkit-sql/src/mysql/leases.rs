//! [`MySqlLeases`]: MySQL's side of [`super::MySqlDriver`] — the statements each
//! lease operation runs. MySQL has no release notification: waiters in other
//! processes poll.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::{
    AcquireRequest, Capabilities, FencingToken, Grant, LockError, LockKey, OwnerId, Result,
    async_trait,
};
use sqlx::AssertSqlSafe;
use sqlx::mysql::MySqlPool;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::sql;
use crate::connect::Within;
use crate::lease::LeaseBackend;

const NAME: &str = "mysql";

pub(super) fn db_error(e: sqlx::Error) -> LockError {
    crate::error::db_error(NAME, e)
}

fn ttl_us(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX / 2)
}

/// MySQL's side of [`super::MySqlDriver`]: its pool and statements.
#[derive(Debug)]
pub struct MySqlLeases {
    pub(super) pool: MySqlPool,
    statements: Statements,
    /// Wakes this driver's own waiters when it releases.
    wake: Arc<Notify>,
    /// Each statement (`request_timeout_ms`).
    pub(super) timeout: Duration,
}

#[derive(Debug)]
struct Statements {
    acquire: Arc<str>,
    create_held: Arc<str>,
    extend: Arc<str>,
    release: Arc<str>,
    force_release: Arc<str>,
    purge: Arc<str>,
}

impl MySqlLeases {
    /// Statements on `table`, each bounded by `timeout`.
    pub(super) fn new(pool: MySqlPool, table: &str, timeout: Duration) -> Self {
        Self {
            pool,
            statements: Statements {
                acquire: sql::acquire(table).into(),
                create_held: sql::create_held(table).into(),
                extend: sql::extend(table).into(),
                release: sql::release(table).into(),
                force_release: sql::force_release(table).into(),
                purge: sql::purge(table).into(),
            },
            wake: Arc::new(Notify::new()),
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

#[async_trait]
impl LeaseBackend for MySqlLeases {
    const NAME: &'static str = NAME;
    /// MySQL has no release notification.
    const POLL_CAP: Duration = Duration::from_millis(100);

    fn capabilities(&self) -> Capabilities {
        Capabilities::baseline()
    }

    fn wake(&self) -> &Arc<Notify> {
        &self.wake
    }

    async fn try_acquire(&self, req: &AcquireRequest) -> Result<Option<Grant>> {
        let sent = Instant::now();
        let owner = req.owner.to_hex();
        let ttl = ttl_us(req.ttl);
        let grant = |fence: u64| Grant::of(req, FencingToken(fence), sent + req.ttl);
        // One connection for both statements: LAST_INSERT_ID is per connection.
        let mut conn = self.pool.acquire().await.map_err(db_error)?;
        let taken = sqlx::query(AssertSqlSafe(self.statements.acquire.clone()))
            .bind(&owner)
            .bind(ttl)
            .bind(&owner)
            .bind(req.key.as_str())
            .bind(&owner)
            .execute(&mut *conn)
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        if taken.rows_affected() == 1 {
            return Ok(Some(grant(taken.last_insert_id())));
        }
        let created = sqlx::query(AssertSqlSafe(self.statements.create_held.clone()))
            .bind(req.key.as_str())
            .bind(&owner)
            .bind(ttl)
            .execute(&mut *conn)
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        Ok((created.rows_affected() == 1).then(|| grant(1)))
    }

    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<bool> {
        let done = sqlx::query(AssertSqlSafe(self.statements.extend.clone()))
            .bind(ttl_us(ttl))
            .bind(key.as_str())
            .bind(owner.to_hex())
            .execute(&self.pool)
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        Ok(done.rows_affected() > 0)
    }

    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        Ok(self.run(&self.statements.release, key, Some(owner)).await? > 0)
    }

    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        Ok(self.run(&self.statements.force_release, key, None).await? > 0)
    }

    async fn purge(&self, key: &LockKey) -> Result<()> {
        self.run(&self.statements.purge, key, None).await.map(drop)
    }
}
