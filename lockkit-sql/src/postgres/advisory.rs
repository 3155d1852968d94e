//! `?mode=advisory`: session-bound `pg_try_advisory_lock` locks (see
//! [`crate::session`] for what that does and does not guarantee).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use lockkit_core::{Capabilities, LockKey, WakeUp};
use sqlx::pool::PoolConnection;
use sqlx::{AssertSqlSafe, PgPool, Postgres};
use tokio::sync::Notify;

use super::driver::{channel, migrate};
use super::listen::{self, Listener};
use super::options::PgOptions;
use crate::connect::Within;
use crate::session::SessionBackend;
use crate::session::SessionDriver;

/// Advisory locks on one 64-bit key per lock: `hashtextextended('<table>:<key>', 0)`.
/// Two keys with the same hash exclude each other (harmless, and vanishingly rare).
#[derive(Debug)]
pub(super) struct Advisory {
    pub(super) pool: PgPool,
    pub(super) namespace: String,
    pub(super) bump: Arc<str>,
    pub(super) channel: String,
    pub(super) wake: Arc<Notify>,
    pub(super) _listener: Listener,
    /// Each statement (`request_timeout_ms`).
    pub(super) timeout: Duration,
}

/// The fences table of advisory mode.
pub(super) fn create_fences(t: &str) -> String {
    format!("CREATE TABLE IF NOT EXISTS {t}_fences (name TEXT PRIMARY KEY, fence BIGINT NOT NULL)")
}

/// Bumps a key's counter. `$1` name.
pub(super) fn bump_fence(t: &str) -> String {
    format!(
        "INSERT INTO {t}_fences AS f (name, fence) VALUES ($1, 1)
         ON CONFLICT (name) DO UPDATE SET fence = f.fence + 1 RETURNING fence"
    )
}

impl Advisory {
    fn lock_name(&self, key: &LockKey) -> String {
        format!("{}:{}", self.namespace, key.as_str())
    }
}

#[async_trait]
impl SessionBackend for Advisory {
    type Db = Postgres;

    fn name(&self) -> &'static str {
        "postgres-advisory"
    }

    fn pool(&self) -> &PgPool {
        &self.pool
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::baseline()
            .with_lease_expiry(false)
            .with_wake_up(WakeUp::Notify)
    }

    fn wake(&self) -> &Arc<Notify> {
        &self.wake
    }

    fn poll_cap(&self) -> Duration {
        Duration::from_millis(250)
    }

    async fn try_lock(
        &self,
        conn: &mut PoolConnection<Postgres>,
        key: &LockKey,
    ) -> Result<bool, sqlx::Error> {
        sqlx::query_scalar("SELECT pg_try_advisory_lock(hashtextextended($1, 0))")
            .bind(self.lock_name(key))
            .fetch_one(&mut **conn)
            .within(self.timeout)
            .await
    }

    async fn bump_fence(
        &self,
        conn: &mut PoolConnection<Postgres>,
        key: &LockKey,
    ) -> Result<u64, sqlx::Error> {
        let fence: i64 = sqlx::query_scalar(AssertSqlSafe(self.bump.clone()))
            .bind(key.as_str())
            .fetch_one(&mut **conn)
            .within(self.timeout)
            .await?;
        Ok(fence as u64)
    }

    async fn unlock(
        &self,
        conn: &mut PoolConnection<Postgres>,
        key: &LockKey,
    ) -> Result<bool, sqlx::Error> {
        sqlx::query_scalar("SELECT pg_advisory_unlock(hashtextextended($1, 0))")
            .bind(self.lock_name(key))
            .fetch_one(&mut **conn)
            .within(self.timeout)
            .await
    }

    async fn ping(&self, conn: &mut PoolConnection<Postgres>) -> Result<(), sqlx::Error> {
        sqlx::query("SELECT 1")
            .execute(&mut **conn)
            .within(self.timeout)
            .await
            .map(|_| ())
    }

    async fn forget_fence(&self, key: &LockKey) -> Result<(), sqlx::Error> {
        let delete = format!("DELETE FROM {}_fences WHERE name = $1", self.namespace);
        sqlx::query(AssertSqlSafe(delete))
            .bind(key.as_str())
            .execute(&self.pool)
            .within(self.timeout)
            .await?;
        Ok(())
    }

    async fn break_lock(&self, key: &LockKey) -> Result<bool, sqlx::Error> {
        let ended: i64 = sqlx::query_scalar(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_locks
             WHERE locktype = 'advisory' AND granted AND objsubid = 1
               AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1, 0)",
        )
        .bind(self.lock_name(key))
        .fetch_one(&self.pool)
        .within(self.timeout)
        .await?;
        Ok(ended > 0)
    }

    async fn announce_release(&self, key: &LockKey) {
        let _ = sqlx::query("SELECT pg_notify($1, $2)")
            .bind(&self.channel)
            .bind(key.as_str())
            .execute(&self.pool)
            .within(self.timeout)
            .await;
    }
}

/// Connects an advisory-mode driver.
pub(super) async fn connect(options: PgOptions) -> lockkit_core::Result<SessionDriver<Advisory>> {
    let pool = options.pool().await?;
    let t = &options.settings.table;
    migrate(&pool, &[create_fences(t)]).await?;
    let channel = channel(t);
    let wake = Arc::new(Notify::new());
    let listener = listen::spawn(pool.clone(), channel.clone(), wake.clone());
    Ok(SessionDriver::new(Advisory {
        pool,
        namespace: t.clone(),
        bump: bump_fence(t).into(),
        channel,
        wake,
        _listener: listener,
        timeout: options.settings.timeouts.request,
    }))
}
