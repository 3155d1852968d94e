//! `?mode=get_lock`: session-bound `GET_LOCK` locks (see [`crate::session`] for
//! what that does and does not guarantee).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use lockkit_core::driver::{Inspect, KeyWakers, LockMode};
use lockkit_core::{Capabilities, LockKey};
use sqlx::pool::PoolConnection;
use sqlx::{AssertSqlSafe, MySql, MySqlPool};

use super::get_lock_sql::{
    bump_fence, create_fences, create_holds, forget_hold, live_holds, on_name, record_hold,
    try_slots,
};
use super::options::MySqlOptions;
use crate::connect::Within;
use crate::lock_names::LockNames;
use crate::mode_names;
use crate::session::{self, LiveHold, SessionBackend, SessionDriver, Taken};

/// `GET_LOCK(SHA1('<table>:<key>'), 0)`: lock names are limited to 64 characters,
/// so every key is hashed to 40. With raw keys, `GET_LOCK('<key>', 0)`: the lock
/// a `mariadb` client takes as `GET_LOCK('<key>', …)`.
#[derive(Debug)]
pub(super) struct GetLock {
    pub(super) pool: MySqlPool,
    pub(super) names: LockNames,
    /// `GET_LOCK`, `RELEASE_LOCK` and `IS_USED_LOCK` of the bound name.
    pub(super) get: Arc<str>,
    pub(super) release: Arc<str>,
    pub(super) used_by: Arc<str>,
    pub(super) bump: Arc<str>,
    pub(super) record: Arc<str>,
    pub(super) forget: Arc<str>,
    pub(super) live_holds: Arc<str>,
    pub(super) wakers: KeyWakers,
    /// Each statement (`request_timeout_ms`).
    pub(super) timeout: Duration,
}

/// Slots tried per statement.
const SLOTS_PER_STATEMENT: u32 = 32;

/// The longest lock name `GET_LOCK` takes.
const MAX_NAME: usize = 64;

/// A [`live_holds`] row, with the holding connection's id.
type HoldRow = session::HoldRow<u64>;

impl GetLock {
    /// A permit: the first free slot of `limit`, tried 32 to a statement.
    async fn try_permit(
        &self,
        conn: &mut PoolConnection<MySql>,
        key: &LockKey,
        limit: u32,
    ) -> Result<Option<Taken>, sqlx::Error> {
        let mut first = 0;
        while first < limit {
            let n = SLOTS_PER_STATEMENT.min(limit - first);
            let mut q = sqlx::query_scalar(AssertSqlSafe(try_slots(n)));
            for i in first..first + n {
                q = q.bind(self.names.taken(key, Taken::Slot(i)));
            }
            let at: Option<i64> = q.fetch_one(&mut **conn).within(self.timeout).await?;
            if let Some(at) = at.and_then(|s| u32::try_from(s).ok()) {
                return Ok(Some(Taken::Slot(first + at)));
            }
            first += n;
        }
        Ok(None)
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
        Capabilities::baseline()
            .with_permits(!self.names.raw)
            .with_inspect(Inspect::Holders)
            .with_lease_expiry(false)
            .with_transaction_locks(true)
    }

    fn wakers(&self) -> &KeyWakers {
        &self.wakers
    }

    fn poll_cap(&self) -> Duration {
        Duration::from_millis(100)
    }

    fn check_key(&self, key: &LockKey) -> lockkit_core::Result<()> {
        if self.names.raw && key.as_str().chars().count() > MAX_NAME {
            return Err(lockkit_core::LockError::Config(format!(
                "with key=raw a key is a GET_LOCK name, at most {MAX_NAME} characters; \
                 `{}` has {}",
                key.as_str(),
                key.as_str().chars().count()
            )));
        }
        Ok(())
    }

    async fn try_lock(
        &self,
        conn: &mut PoolConnection<MySql>,
        key: &LockKey,
        mode: LockMode,
    ) -> Result<Option<Taken>, sqlx::Error> {
        if let LockMode::Permit { limit } = mode {
            return self.try_permit(conn, key, limit).await;
        }
        let got: Option<i64> = sqlx::query_scalar(AssertSqlSafe(self.get.clone()))
            .bind(self.names.key(key))
            .fetch_one(&mut **conn)
            .within(self.timeout)
            .await?;
        Ok((got == Some(1)).then_some(Taken::Key))
    }

    async fn bump_fence(
        &self,
        conn: &mut PoolConnection<MySql>,
        key: &LockKey,
        mode: LockMode,
        taken: Taken,
        label: Option<&str>,
    ) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(AssertSqlSafe(self.bump.clone()))
            .bind(key.as_str())
            .execute(&mut **conn)
            .within(self.timeout)
            .await?;
        sqlx::query(AssertSqlSafe(self.record.clone()))
            .bind(key.as_str())
            .bind(self.names.taken(key, taken))
            .bind(mode_names::mode_name(mode))
            .bind(mode.limit().map(i64::from))
            .bind(label)
            .execute(&mut **conn)
            .within(self.timeout)
            .await?;
        Ok(done.last_insert_id())
    }

    async fn unlock(
        &self,
        conn: &mut PoolConnection<MySql>,
        key: &LockKey,
        _mode: LockMode,
        taken: Taken,
    ) -> Result<bool, sqlx::Error> {
        let name = self.names.taken(key, taken);
        sqlx::query(AssertSqlSafe(self.forget.clone()))
            .bind(key.as_str())
            .bind(&name)
            .execute(&mut **conn)
            .within(self.timeout)
            .await?;
        let released: Option<i64> = sqlx::query_scalar(AssertSqlSafe(self.release.clone()))
            .bind(name)
            .fetch_one(&mut **conn)
            .within(self.timeout)
            .await?;
        Ok(released == Some(1))
    }

    async fn live_holds(&self, key: &LockKey) -> Result<Vec<LiveHold>, sqlx::Error> {
        Ok(self
            .hold_rows(key)
            .await?
            .into_iter()
            .map(session::live_hold)
            .collect())
    }

    async fn ping(&self, conn: &mut PoolConnection<MySql>) -> Result<(), sqlx::Error> {
        sqlx::query("SELECT 1")
            .execute(&mut **conn)
            .within(self.timeout)
            .await
            .map(|_| ())
    }

    async fn forget_fence(&self, key: &LockKey) -> Result<(), sqlx::Error> {
        for table in ["session_holds", "fences"] {
            let delete = format!(
                "DELETE FROM {}_{table} WHERE name = ?",
                self.names.namespace
            );
            sqlx::query(AssertSqlSafe(delete))
                .bind(key.as_str())
                .execute(&self.pool)
                .within(self.timeout)
                .await?;
        }
        Ok(())
    }

    async fn break_lock(&self, key: &LockKey) -> Result<bool, sqlx::Error> {
        let holder: Option<i64> = sqlx::query_scalar(AssertSqlSafe(self.used_by.clone()))
            .bind(self.names.key(key))
            .fetch_one(&self.pool)
            .within(self.timeout)
            .await?;
        let mut sessions: Vec<u64> = self
            .hold_rows(key)
            .await?
            .into_iter()
            .map(|r| r.4)
            .collect();
        sessions.extend(holder.and_then(|id| u64::try_from(id).ok()));
        sessions.sort_unstable();
        sessions.dedup();
        for id in &sessions {
            // A connection id is a number: safe to splice into KILL.
            sqlx::query(AssertSqlSafe(format!("KILL CONNECTION {id}")))
                .execute(&self.pool)
                .within(self.timeout)
                .await?;
        }
        Ok(!sessions.is_empty())
    }
}

impl GetLock {
    /// The records whose session holds their lock.
    async fn hold_rows(&self, key: &LockKey) -> Result<Vec<HoldRow>, sqlx::Error> {
        sqlx::query_as(AssertSqlSafe(self.live_holds.clone()))
            .bind(key.as_str())
            .fetch_all(&self.pool)
            .within(self.timeout)
            .await
    }
}

/// A `GET_LOCK`-mode driver on `pool`.
pub(super) async fn on_pool(
    pool: MySqlPool,
    options: MySqlOptions,
) -> lockkit_core::Result<SessionDriver<GetLock>> {
    let t = &options.settings.table;
    let raw = options.settings.raw_keys;
    let holds = format!("{t}_session_holds");
    if options.settings.tables == crate::table::Tables::Existing {
        super::migrate::existing(&pool, &holds).await?;
    } else {
        let ddl = [create_fences(t), create_holds(t)];
        super::migrate::tables(&pool, &ddl, std::slice::from_ref(&holds), None)
            .await
            .map_err(|e| crate::error::db_error("mysql-get-lock", e))?;
    }
    Ok(SessionDriver::new(GetLock {
        pool,
        names: LockNames {
            namespace: t.clone(),
            raw,
        },
        get: on_name("GET_LOCK", raw).into(),
        release: on_name("RELEASE_LOCK", raw).into(),
        used_by: on_name("IS_USED_LOCK", raw).into(),
        bump: bump_fence(t).into(),
        record: record_hold(t).into(),
        forget: forget_hold(t).into(),
        live_holds: live_holds(t, raw).into(),
        wakers: KeyWakers::default(),
        timeout: options.settings.timeouts.request,
    }))
}
