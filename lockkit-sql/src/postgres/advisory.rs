//! `?mode=advisory`: session-bound `pg_try_advisory_lock` locks (see
//! [`crate::session`] for what that does and does not guarantee).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use lockkit_core::driver::{Inspect, KeyWakers, LockMode};
use lockkit_core::{Capabilities, LockKey, WakeUp};
use sqlx::pool::PoolConnection;
use sqlx::{AssertSqlSafe, PgPool, Postgres};

use super::advisory_sql::{
    TRY_PERMIT, TRY_SLOTS, bump_fence, create_fences, create_holds, id_of, live_holds, try_lock,
    unlock,
};
use super::driver::{channel, prepare_tables};
use super::listen::Listener;
use super::options::PgOptions;
use super::queue::Wakeups;
use crate::connect::Within;
use crate::error::ConflictRetries;
use crate::lock_names::LockNames;
use crate::mode_names;
use crate::session::{self, LiveHold, SessionBackend, SessionDriver, Taken};

/// A [`live_holds`] row, with the holding backend's pid.
type HoldRow = session::HoldRow<i32>;

/// Advisory locks on one 64-bit key per lock: `hashtextextended('<table>:<key>', 0)`.
/// Two keys with the same hash exclude each other (harmless, and vanishingly rare).
/// With raw keys, the key is the id: `pg_advisory_lock(42)` in `psql` takes the
/// lock `42`.
#[derive(Debug)]
pub(super) struct Advisory {
    pub(super) pool: PgPool,
    pub(super) names: LockNames,
    pub(super) try_exclusive: Arc<str>,
    pub(super) try_shared: Arc<str>,
    pub(super) bump: Arc<str>,
    pub(super) unlock: Arc<str>,
    pub(super) unlock_shared: Arc<str>,
    pub(super) unlock_permit: Arc<str>,
    pub(super) live_holds: Arc<str>,
    pub(super) channel: String,
    pub(super) wakeups: Arc<Wakeups>,
    pub(super) listener: Listener,
    /// Each statement (`request_timeout_ms`).
    pub(super) timeout: Duration,
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
            .with_shared(true)
            .with_permits(!self.names.raw)
            .with_inspect(Inspect::Holders)
            .with_lease_expiry(false)
            .with_wake_up(WakeUp::Notify)
            .with_watch(true)
            .with_transaction_locks(true)
    }

    fn wakers(&self) -> &KeyWakers {
        self.listener.keep_running();
        &self.wakeups.all
    }

    fn poll_cap(&self) -> Duration {
        Duration::from_millis(250)
    }

    fn check_key(&self, key: &LockKey) -> lockkit_core::Result<()> {
        if self.names.raw && key.as_str().parse::<i64>().is_err() {
            return Err(lockkit_core::LockError::Config(format!(
                "with key=raw a key is a PostgreSQL advisory lock id, a 64-bit integer; \
                 `{}` is not one",
                key.as_str()
            )));
        }
        Ok(())
    }

    async fn try_lock(
        &self,
        conn: &mut PoolConnection<Postgres>,
        key: &LockKey,
        mode: LockMode,
    ) -> Result<Option<Taken>, sqlx::Error> {
        let name = self.names.key(key);
        let statement = match mode {
            LockMode::Permit { limit } => return self.try_permit(conn, &name, limit).await,
            LockMode::Shared => &self.try_shared,
            _ => &self.try_exclusive,
        };
        let got: bool = sqlx::query_scalar(AssertSqlSafe(statement.clone()))
            .bind(name)
            .fetch_one(&mut **conn)
            .within(self.timeout)
            .await?;
        Ok(got.then_some(Taken::Key))
    }

    async fn bump_fence(
        &self,
        conn: &mut PoolConnection<Postgres>,
        key: &LockKey,
        mode: LockMode,
        taken: Taken,
        label: Option<&str>,
    ) -> Result<u64, sqlx::Error> {
        // Two permits of one key bump its counter at once: under SERIALIZABLE
        // the second may fail to serialize, having done nothing.
        let name = self.names.taken(key, taken);
        let mut retries = ConflictRetries::new();
        let fence: i64 = loop {
            let bumped = sqlx::query_scalar(AssertSqlSafe(self.bump.clone()))
                .bind(key.as_str())
                .bind(&name)
                .bind(mode_names::mode_name(mode))
                .bind(mode.limit().map(i64::from))
                .bind(label)
                .fetch_one(&mut **conn)
                .within(self.timeout)
                .await;
            match bumped {
                Err(e) if retries.again(&e).await => {}
                other => break other?,
            }
        };
        Ok(fence as u64)
    }

    async fn unlock(
        &self,
        conn: &mut PoolConnection<Postgres>,
        key: &LockKey,
        mode: LockMode,
        taken: Taken,
    ) -> Result<bool, sqlx::Error> {
        let statement = match (mode, taken) {
            (_, Taken::Slot(_)) => &self.unlock_permit,
            (LockMode::Shared, _) => &self.unlock_shared,
            _ => &self.unlock,
        };
        let slot = match taken {
            Taken::Slot(i) => i as i32,
            Taken::Key => 0,
        };
        let mut q = sqlx::query_scalar(AssertSqlSafe(statement.clone()))
            .bind(self.names.key(key))
            .bind(key.as_str());
        if matches!(taken, Taken::Slot(_)) {
            q = q.bind(slot);
        }
        q.fetch_one(&mut **conn).within(self.timeout).await
    }

    async fn live_holds(&self, key: &LockKey) -> Result<Vec<LiveHold>, sqlx::Error> {
        let rows: Vec<HoldRow> = sqlx::query_as(AssertSqlSafe(self.live_holds.clone()))
            .bind(key.as_str())
            .fetch_all(&self.pool)
            .within(self.timeout)
            .await?;
        Ok(rows.into_iter().map(session::live_hold).collect())
    }

    async fn ping(&self, conn: &mut PoolConnection<Postgres>) -> Result<(), sqlx::Error> {
        sqlx::query("SELECT 1")
            .execute(&mut **conn)
            .within(self.timeout)
            .await
            .map(|_| ())
    }

    async fn forget_fence(&self, key: &LockKey) -> Result<(), sqlx::Error> {
        let t = &self.names.namespace;
        let delete = format!(
            "WITH h AS (DELETE FROM {t}_session_holds WHERE name = $1)
             DELETE FROM {t}_fences WHERE name = $1"
        );
        sqlx::query(AssertSqlSafe(delete))
            .bind(key.as_str())
            .execute(&self.pool)
            .within(self.timeout)
            .await?;
        Ok(())
    }

    async fn break_lock(&self, key: &LockKey) -> Result<bool, sqlx::Error> {
        // The key's own id (held by locks, readers, and permits' shared hold),
        // and the sessions recorded holding a slot.
        let holders = format!(
            "SELECT pid FROM pg_locks
             WHERE locktype = 'advisory' AND granted AND objsubid = 1
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
               AND ((classid::bigint << 32) | objid::bigint) = {}",
            id_of("$1", self.names.raw)
        );
        let mut sessions: Vec<i32> = sqlx::query_scalar(AssertSqlSafe(holders))
            .bind(self.names.key(key))
            .fetch_all(&self.pool)
            .within(self.timeout)
            .await?;
        let rows: Vec<HoldRow> = sqlx::query_as(AssertSqlSafe(self.live_holds.clone()))
            .bind(key.as_str())
            .fetch_all(&self.pool)
            .within(self.timeout)
            .await?;
        sessions.extend(rows.into_iter().map(|r| r.4));
        sessions.sort_unstable();
        sessions.dedup();
        let ended: i64 = sqlx::query_scalar(
            "SELECT count(pg_terminate_backend(p)) FROM unnest($1::int4[]) AS p",
        )
        .bind(&sessions)
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

impl Advisory {
    /// A permit: the key's own id shared, then a free slot, 32 slots tried per
    /// statement; the shared lock is given back when no slot is free.
    async fn try_permit(
        &self,
        conn: &mut PoolConnection<Postgres>,
        name: &str,
        limit: u32,
    ) -> Result<Option<Taken>, sqlx::Error> {
        let limit = i32::try_from(limit).unwrap_or(i32::MAX);
        let mut first = 0;
        while first < limit {
            let last = first.saturating_add(SLOTS_PER_STATEMENT - 1).min(limit - 1);
            let statement = if first == 0 { TRY_PERMIT } else { TRY_SLOTS };
            let slot: i32 = sqlx::query_scalar(statement)
                .bind(name)
                .bind(first)
                .bind(last)
                .fetch_one(&mut **conn)
                .within(self.timeout)
                .await?;
            match slot {
                -2 => return Ok(None),
                -1 => first = last + 1,
                slot => return Ok(u32::try_from(slot).ok().map(Taken::Slot)),
            }
        }
        sqlx::query("SELECT pg_advisory_unlock_shared(hashtextextended($1, 0))")
            .bind(name)
            .execute(&mut **conn)
            .within(self.timeout)
            .await?;
        Ok(None)
    }
}

/// Slots tried per statement.
const SLOTS_PER_STATEMENT: i32 = 32;

/// An advisory-mode driver on `pool`.
pub(super) async fn on_pool(
    pool: PgPool,
    options: PgOptions,
) -> lockkit_core::Result<SessionDriver<Advisory>> {
    let pooled = super::pooler::transaction_pooler(&pool, &options.settings)
        .await
        .map_err(super::leases::db_error)?;
    if pooled {
        return Err(lockkit_core::LockError::Config(
            super::pooler::NO_SESSIONS.into(),
        ));
    }
    let t = &options.settings.table;
    let raw = options.settings.raw_keys;
    let ddl = [create_fences(t), create_holds(t)];
    let probe = format!("{t}_session_holds");
    prepare_tables(&pool, options.settings.tables, &ddl, &probe).await?;
    let channel = channel(t);
    let listener = Listener::shared(&pool, &channel);
    let wakeups = listener.wakeups().clone();
    Ok(SessionDriver::new(Advisory {
        pool,
        names: LockNames {
            namespace: t.clone(),
            raw,
        },
        try_exclusive: try_lock("pg_try_advisory_lock", raw).into(),
        try_shared: try_lock("pg_try_advisory_lock_shared", raw).into(),
        bump: bump_fence(t, raw).into(),
        unlock: unlock(t, "pg_advisory_unlock", false, raw).into(),
        unlock_shared: unlock(t, "pg_advisory_unlock_shared", false, raw).into(),
        unlock_permit: unlock(t, "", true, false).into(),
        live_holds: live_holds(t).into(),
        channel,
        wakeups,
        listener,
        timeout: options.settings.timeouts.request,
    }))
}
