//! `?mode=get_lock`: session-bound `GET_LOCK` locks (see [`crate::session`] for
//! what that does and does not guarantee).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use lockkit_core::{Capabilities, LockKey};
use sqlx::pool::PoolConnection;
use sqlx::{AssertSqlSafe, MySql, MySqlPool};
use tokio::sync::Notify;

use super::options::MySqlOptions;
use crate::connect::Within;
use crate::session::{SessionBackend, SessionDriver};

/// `GET_LOCK(SHA1('<table>:<key>'), 0)`: lock names are limited to 64 characters,
/// so every key is hashed to 40.
#[derive(Debug)]
pub(super) struct GetLock {
    pub(super) pool: MySqlPool,
    pub(super) namespace: String,
    pub(super) bump: Arc<str>,
    pub(super) wake: Arc<Notify>,
    /// Each statement (`request_timeout_ms`).
    pub(super) timeout: Duration,
}

/// The fences table of `GET_LOCK` mode.
pub(super) fn create_fences(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {t}_fences (
            name VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
            fence BIGINT NOT NULL
        ) ENGINE=InnoDB"
    )
}

/// Bumps a key's counter; the new value comes back as the last-insert id.
pub(super) fn bump_fence(t: &str) -> String {
    format!(
        "INSERT INTO {t}_fences (name, fence) VALUES (?, LAST_INSERT_ID(1))
         ON DUPLICATE KEY UPDATE fence = LAST_INSERT_ID(fence + 1)"
    )
}

impl GetLock {
    fn lock_name(&self, key: &LockKey) -> String {
        format!("{}:{}", self.namespace, key.as_str())
    }
}

#[async_trait]
impl SessionBackend for GetLock {
    type Db = MySql;

    fn name(&self) -> &'static str {
        "mysql-get-lock"
    }

    fn pool(&self) -> &MySqlPool {
        &self.pool
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::baseline().with_lease_expiry(false)
    }

    fn wake(&self) -> &Arc<Notify> {
        &self.wake
    }

    fn poll_cap(&self) -> Duration {
        Duration::from_millis(100)
    }

    async fn try_lock(
        &self,
        conn: &mut PoolConnection<MySql>,
        key: &LockKey,
    ) -> Result<bool, sqlx::Error> {
        let got: Option<i64> = sqlx::query_scalar("SELECT CAST(GET_LOCK(SHA1(?), 0) AS SIGNED)")
            .bind(self.lock_name(key))
            .fetch_one(&mut **conn)
            .within(self.timeout)
            .await?;
        Ok(got == Some(1))
    }

    async fn bump_fence(
        &self,
        conn: &mut PoolConnection<MySql>,
        key: &LockKey,
    ) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(AssertSqlSafe(self.bump.clone()))
            .bind(key.as_str())
            .execute(&mut **conn)
            .within(self.timeout)
            .await?;
        Ok(done.last_insert_id())
    }

    async fn unlock(
        &self,
        conn: &mut PoolConnection<MySql>,
        key: &LockKey,
    ) -> Result<bool, sqlx::Error> {
        let released: Option<i64> =
            sqlx::query_scalar("SELECT CAST(RELEASE_LOCK(SHA1(?)) AS SIGNED)")
                .bind(self.lock_name(key))
                .fetch_one(&mut **conn)
                .within(self.timeout)
                .await?;
        Ok(released == Some(1))
    }

    async fn ping(&self, conn: &mut PoolConnection<MySql>) -> Result<(), sqlx::Error> {
        sqlx::query("SELECT 1")
            .execute(&mut **conn)
            .within(self.timeout)
            .await
            .map(|_| ())
    }

    async fn forget_fence(&self, key: &LockKey) -> Result<(), sqlx::Error> {
        let delete = format!("DELETE FROM {}_fences WHERE name = ?", self.namespace);
        sqlx::query(AssertSqlSafe(delete))
            .bind(key.as_str())
            .execute(&self.pool)
            .within(self.timeout)
            .await?;
        Ok(())
    }

    async fn break_lock(&self, key: &LockKey) -> Result<bool, sqlx::Error> {
        let holder: Option<i64> =
            sqlx::query_scalar("SELECT CAST(IS_USED_LOCK(SHA1(?)) AS SIGNED)")
                .bind(self.lock_name(key))
                .fetch_one(&self.pool)
                .within(self.timeout)
                .await?;
        let Some(id) = holder else {
            return Ok(false);
        };
        // A connection id is a number: safe to splice into KILL.
        sqlx::query(AssertSqlSafe(format!("KILL CONNECTION {id}")))
            .execute(&self.pool)
            .within(self.timeout)
            .await?;
        Ok(true)
    }
}

/// Connects a `GET_LOCK`-mode driver.
pub(super) async fn connect(options: MySqlOptions) -> lockkit_core::Result<SessionDriver<GetLock>> {
    let pool = options.pool().await?;
    let t = &options.settings.table;
    sqlx::query(AssertSqlSafe(create_fences(t)))
        .execute(&pool)
        .await
        .map_err(|e| crate::error::db_error("mysql-get-lock", e))?;
    Ok(SessionDriver::new(GetLock {
        pool,
        namespace: t.clone(),
        bump: bump_fence(t).into(),
        wake: Arc::new(Notify::new()),
        timeout: options.settings.timeouts.request,
    }))
}
