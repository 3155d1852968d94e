//! `?mode=get_lock`: session-bound `GET_LOCK` locks (see [`crate::session`] for
//! what that does and does not guarantee).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use lockkit_core::driver::{Inspect, LockMode};
use lockkit_core::{Capabilities, LockKey};
use sqlx::pool::PoolConnection;
use sqlx::{AssertSqlSafe, MySql, MySqlPool};
use tokio::sync::Notify;

use super::options::MySqlOptions;
use crate::connect::Within;
use crate::session::{self, LiveHold, SessionBackend, SessionDriver, Taken};

/// `GET_LOCK(SHA1('<table>:<key>'), 0)`: lock names are limited to 64 characters,
/// so every key is hashed to 40.
#[derive(Debug)]
pub(super) struct GetLock {
    pub(super) pool: MySqlPool,
    pub(super) namespace: String,
    pub(super) bump: Arc<str>,
    pub(super) record: Arc<str>,
    pub(super) forget: Arc<str>,
    pub(super) live_holds: Arc<str>,
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

/// The holds' records, for inspection and the semaphore's limit check.
pub(super) fn create_holds(t: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {t}_session_holds (
            name VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
            session BIGINT UNSIGNED NOT NULL,  -- CONNECTION_ID() of the holder
            lock_name CHAR(40) NOT NULL,
            mode VARCHAR(16) NOT NULL,
            lim BIGINT NULL,
            token BIGINT NOT NULL,
            label TEXT NULL,
            PRIMARY KEY (name, session, lock_name)
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

/// Records this session's hold with the token just bumped. Binds: name, lock
/// name, mode, limit, label.
pub(super) fn record_hold(t: &str) -> String {
    format!(
        "INSERT INTO {t}_session_holds (name, session, lock_name, mode, lim, token, label)
         VALUES (?, CONNECTION_ID(), SHA1(?), ?, ?, LAST_INSERT_ID(), ?)
         ON DUPLICATE KEY UPDATE mode = VALUES(mode), lim = VALUES(lim),
             token = VALUES(token), label = VALUES(label)"
    )
}

/// Forgets this session's record of a hold. Binds: name, lock name.
pub(super) fn forget_hold(t: &str) -> String {
    format!(
        "DELETE FROM {t}_session_holds
         WHERE name = ? AND session = CONNECTION_ID() AND lock_name = SHA1(?)"
    )
}

/// The records whose session holds their lock: mode, limit, token, label,
/// session. Binds: name.
pub(super) fn live_holds(t: &str) -> String {
    format!(
        "SELECT mode, lim, token, label, session FROM {t}_session_holds
         WHERE name = ? AND IS_USED_LOCK(lock_name) = session ORDER BY token"
    )
}

/// Tries `n` slots of a semaphore in order, in one statement, each lock name
/// bound: `CASE WHEN GET_LOCK(SHA1(?), 0) = 1 THEN 0 … ELSE -1 END` (the
/// position of the first taken).
fn try_slots(n: u32) -> String {
    let whens: String = (0..n)
        .map(|i| format!(" WHEN GET_LOCK(SHA1(?), 0) = 1 THEN {i}"))
        .collect();
    format!("SELECT CAST(CASE{whens} ELSE -1 END AS SIGNED)")
}

/// Slots tried per statement.
const SLOTS_PER_STATEMENT: u32 = 32;

/// A [`live_holds`] row: mode, limit, token, label, session.
type HoldRow = (String, Option<i64>, i64, Option<String>, u64);

impl GetLock {
    fn lock_name(&self, key: &LockKey) -> String {
        format!("{}:{}", self.namespace, key.as_str())
    }

    /// The name of the lock `taken`: the key's own, or a slot's.
    fn taken_name(&self, key: &LockKey, taken: Taken) -> String {
        match taken {
            Taken::Key => self.lock_name(key),
            Taken::Slot(i) => format!("{}\u{1}{i}", self.lock_name(key)),
        }
    }

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
                q = q.bind(self.taken_name(key, Taken::Slot(i)));
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
            .with_permits(true)
            .with_inspect(Inspect::Holders)
            .with_lease_expiry(false)
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
        mode: LockMode,
    ) -> Result<Option<Taken>, sqlx::Error> {
        if let LockMode::Permit { limit } = mode {
            return self.try_permit(conn, key, limit).await;
        }
        let got: Option<i64> = sqlx::query_scalar("SELECT CAST(GET_LOCK(SHA1(?), 0) AS SIGNED)")
            .bind(self.lock_name(key))
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
            .bind(self.taken_name(key, taken))
            .bind(session::mode_name(mode))
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
        let name = self.taken_name(key, taken);
        sqlx::query(AssertSqlSafe(self.forget.clone()))
            .bind(key.as_str())
            .bind(&name)
            .execute(&mut **conn)
            .within(self.timeout)
            .await?;
        let released: Option<i64> =
            sqlx::query_scalar("SELECT CAST(RELEASE_LOCK(SHA1(?)) AS SIGNED)")
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
            .map(|(mode, lim, token, label, _)| (session::mode_of(&mode, lim), token as u64, label))
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
            let delete = format!("DELETE FROM {}_{table} WHERE name = ?", self.namespace);
            sqlx::query(AssertSqlSafe(delete))
                .bind(key.as_str())
                .execute(&self.pool)
                .within(self.timeout)
                .await?;
        }
        Ok(())
    }

    async fn break_lock(&self, key: &LockKey) -> Result<bool, sqlx::Error> {
        let holder: Option<i64> =
            sqlx::query_scalar("SELECT CAST(IS_USED_LOCK(SHA1(?)) AS SIGNED)")
                .bind(self.lock_name(key))
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

/// Connects a `GET_LOCK`-mode driver.
pub(super) async fn connect(options: MySqlOptions) -> lockkit_core::Result<SessionDriver<GetLock>> {
    let pool = options.pool().await?;
    let t = &options.settings.table;
    for ddl in [create_fences(t), create_holds(t)] {
        sqlx::query(AssertSqlSafe(ddl))
            .execute(&pool)
            .await
            .map_err(|e| crate::error::db_error("mysql-get-lock", e))?;
    }
    Ok(SessionDriver::new(GetLock {
        pool,
        namespace: t.clone(),
        bump: bump_fence(t).into(),
        record: record_hold(t).into(),
        forget: forget_hold(t).into(),
        live_holds: live_holds(t).into(),
        wake: Arc::new(Notify::new()),
        timeout: options.settings.timeouts.request,
    }))
}
