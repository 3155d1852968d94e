//! [`PgDriver`]: the lease table over a sqlx Postgres pool.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::{
    AcquireRequest, Capabilities, FencingToken, Grant, LockDriver, LockError, LockKey, OwnerId,
    Renewal, Result, WakeUp, async_trait, renew_in_batches,
};
use sqlx::AssertSqlSafe;
use sqlx::postgres::PgPool;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::listen::{self, Listener};
use super::options::PgOptions;
use super::sql;
use crate::connect::Within;
use crate::error;
use crate::renew;
use crate::wait::acquire_polling;

const NAME: &str = "postgres";

/// The NOTIFY channel for releases on `table`.
pub(super) fn channel(table: &str) -> String {
    format!("lockkit_{table}")
}

/// Longest pause between attempts when no NOTIFY arrives.
const POLL_CAP: Duration = Duration::from_millis(250);

fn db_error(e: sqlx::Error) -> LockError {
    error::db_error(NAME, e)
}

fn ttl_ms(ttl: Duration) -> f64 {
    ttl.as_secs_f64() * 1000.0
}

/// Opens the connection pool.
pub(super) async fn pool(options: &PgOptions) -> Result<PgPool> {
    crate::connect::open_pool::<sqlx::Postgres>(NAME, &options.settings, options.connect.clone())
        .await
}

/// Runs `ddl` under a transaction-scoped advisory lock: `CREATE TABLE IF NOT EXISTS`
/// can still collide on the catalog when two sessions race.
pub(super) async fn migrate(pool: &PgPool, ddl: &str) -> Result<()> {
    // Serialise concurrent first users: CREATE TABLE IF NOT EXISTS can still
    // collide on the catalog when two sessions race.
    let mut tx = pool.begin().await.map_err(db_error)?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('lockkit-migrate'))")
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
    sqlx::query(AssertSqlSafe(ddl.to_string()))
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
    tx.commit().await.map_err(db_error)
}

/// The PostgreSQL lease-table driver. See the [module docs](super).
#[derive(Debug, Clone)]
pub struct PgDriver {
    pool: PgPool,
    statements: Arc<Statements>,
    wake: Arc<Notify>,
    _listener: Arc<Listener>,
    /// Each statement (`request_timeout_ms`).
    timeout: Duration,
}

#[derive(Debug)]
struct Statements {
    acquire: Arc<str>,
    extend: Arc<str>,
    extend_many: Arc<str>,
    release: Arc<str>,
    force_release: Arc<str>,
    purge: Arc<str>,
    channel: String,
}

impl PgDriver {
    /// Connects, creates the lease table if needed, and starts listening for
    /// releases. Always leases: [`super::connect`] honours `mode=advisory`.
    ///
    /// # Errors
    ///
    /// [`LockError::Connection`] if the server cannot be reached or refuses us.
    pub async fn connect(options: PgOptions) -> Result<Self> {
        let pool = pool(&options).await?;
        migrate(&pool, &sql::create_table(&options.settings.table)).await?;
        let t = &options.settings.table;
        let channel = channel(t);
        let wake = Arc::new(Notify::new());
        let listener = listen::spawn(pool.clone(), channel.clone(), wake.clone());
        Ok(Self {
            pool,
            statements: Arc::new(Statements {
                acquire: sql::acquire(t).into(),
                extend: sql::extend(t).into(),
                extend_many: sql::extend_many(t).into(),
                release: sql::release(t).into(),
                force_release: sql::force_release(t).into(),
                purge: sql::purge(t).into(),
                channel,
            }),
            wake,
            _listener: Arc::new(listener),
            timeout: options.settings.timeouts.request,
        })
    }

    /// Creates the lease table if it is missing (also done by `connect`).
    ///
    /// # Errors
    ///
    /// A backend error, e.g. without the privilege to create tables.
    pub async fn migrate(&self, table: &str) -> Result<()> {
        migrate(
            &self.pool,
            &sql::create_table(&crate::table::validate_table(table)?),
        )
        .await
    }

    async fn try_acquire(&self, req: &AcquireRequest) -> Result<Option<Grant>> {
        let sent = Instant::now();
        let fence: Option<i64> = sqlx::query_scalar(AssertSqlSafe(self.statements.acquire.clone()))
            .bind(req.key.as_str())
            .bind(req.owner.to_hex())
            .bind(ttl_ms(req.ttl))
            .fetch_optional(&self.pool)
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        Ok(fence.map(|f| Grant::of(req, FencingToken(f as u64), sent + req.ttl)))
    }
}

#[async_trait]
impl LockDriver for PgDriver {
    fn name(&self) -> &'static str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::baseline().with_wake_up(WakeUp::Notify)
    }

    async fn acquire(&self, req: &AcquireRequest) -> Result<Grant> {
        req.require_mode(NAME, self.capabilities())?;
        acquire_polling(req, &self.wake, POLL_CAP, || self.try_acquire(req)).await
    }

    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant> {
        let sent = Instant::now();
        let done = sqlx::query(AssertSqlSafe(self.statements.extend.clone()))
            .bind(key.as_str())
            .bind(owner.to_hex())
            .bind(ttl_ms(ttl))
            .execute(&self.pool)
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        if done.rows_affected() == 0 {
            return Err(renew::not_ours(key));
        }
        Ok(sent + ttl)
    }

    async fn extend_many(&self, renewals: &[Renewal]) -> Vec<Result<Instant>> {
        renew_in_batches(NAME, renewals, renew::MAX_BATCH, |ttl, batch| async move {
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
            Ok(renew::renewed_flags(&batch, rows))
        })
        .await
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
        Ok(freed > 0)
    }

    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        let freed: i64 = sqlx::query_scalar(AssertSqlSafe(self.statements.force_release.clone()))
            .bind(key.as_str())
            .bind(&self.statements.channel)
            .fetch_one(&self.pool)
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        Ok(freed > 0)
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
