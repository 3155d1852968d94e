//! [`SqliteDriver`]: the lease table over a sqlx pool.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use lockkit_core::driver::{Inspect, Inspection, LockMode};
use lockkit_core::{
    AcquireRequest, Capabilities, FencingToken, Grant, LockDriver, LockError, LockKey, OwnerId,
    Renewal, Result, async_trait, renew_in_batches,
};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{AssertSqlSafe, Sqlite, Transaction};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::clock::monotonic_ms;
use super::options::SqliteOptions;
use super::sql::{self, Statements};
use crate::error;
use crate::renew;
use crate::wait::acquire_polling;

pub(super) const NAME: &str = "sqlite";

/// The SQLite lease-table driver. See the [module docs](super).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use lockkit::Locker;
/// use lockkit::sqlite::{SqliteDriver, SqliteOptions};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), lockkit::LockError> {
/// let driver = SqliteDriver::connect(SqliteOptions::memory()).await?;
/// let locker = Locker::new(Arc::new(driver));
/// let guard = locker.try_lock("report:daily").await?;
/// assert_eq!(guard.token().get(), 1);
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SqliteDriver {
    pub(super) pool: SqlitePool,
    pub(super) statements: Arc<Statements>,
    /// Wakes waiters in this process when a driver of this process releases.
    local_wake: Arc<Notify>,
}

fn local_wakers() -> &'static Mutex<HashMap<PathBuf, Weak<Notify>>> {
    static WAKERS: OnceLock<Mutex<HashMap<PathBuf, Weak<Notify>>>> = OnceLock::new();
    WAKERS.get_or_init(Default::default)
}

fn local_wake_for(options: &SqliteOptions) -> Arc<Notify> {
    let Some(path) = options.path() else {
        return Arc::new(Notify::new());
    };
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut wakers = local_wakers().lock().unwrap_or_else(|e| e.into_inner());
    wakers.retain(|_, w| w.strong_count() > 0);
    if let Some(existing) = wakers.get(&key).and_then(Weak::upgrade) {
        return existing;
    }
    let notify = Arc::new(Notify::new());
    wakers.insert(key, Arc::downgrade(&notify));
    notify
}

pub(super) fn db_error(e: sqlx::Error) -> LockError {
    error::db_error(NAME, e)
}

/// Where opening the database failed.
enum OpenError {
    /// Opening the file (and its pragmas, such as the switch to WAL).
    Connect(sqlx::Error),
    /// Creating the lease table.
    Table(sqlx::Error),
}

impl OpenError {
    fn cause(&self) -> &sqlx::Error {
        match self {
            OpenError::Connect(e) | OpenError::Table(e) => e,
        }
    }
}

/// Opens a pool on the database and creates the lease table if it is missing.
async fn open(
    pool: &SqlitePoolOptions,
    connect: &SqliteConnectOptions,
    table: &str,
) -> std::result::Result<SqlitePool, OpenError> {
    let pool = pool
        .clone()
        .connect_with(connect.clone())
        .await
        .map_err(OpenError::Connect)?;
    sqlx::query(AssertSqlSafe(sql::create_table(table)))
        .execute(&pool)
        .await
        .map_err(OpenError::Table)?;
    let columns: Vec<String> = sqlx::query_scalar(AssertSqlSafe(sql::table_columns(table)))
        .fetch_all(&pool)
        .await
        .map_err(OpenError::Table)?;
    if !columns.iter().any(|c| c == "label") {
        // A table made by lockkit before holders had labels.
        sqlx::query(AssertSqlSafe(sql::add_label(table)))
            .execute(&pool)
            .await
            .map_err(OpenError::Table)?;
    }
    sqlx::query(AssertSqlSafe(sql::create_holders(table)))
        .execute(&pool)
        .await
        .map_err(OpenError::Table)?;
    Ok(pool)
}

/// SQLITE_BUSY or SQLITE_LOCKED, with any extended code: another connection holds
/// a lock we need.
fn is_busy(e: &sqlx::Error) -> bool {
    let sqlx::Error::Database(db) = e else {
        return false;
    };
    db.code()
        .and_then(|c| c.parse::<i32>().ok())
        .is_some_and(|c| matches!(c & 0xff, 5 | 6))
}

/// Longest pause between attempts of a waiter: bounds hand-off latency across
/// processes (waiters in the releasing process are woken at once).
const POLL_CAP: std::time::Duration = std::time::Duration::from_millis(50);

impl SqliteDriver {
    /// Opens (creating if needed) the database and the lease table.
    ///
    /// # Errors
    ///
    /// [`LockError::Config`] when the file's directory does not exist or the path is a
    /// directory; [`LockError::Connection`] when SQLite cannot open the file.
    pub async fn connect(options: SqliteOptions) -> Result<Self> {
        options.preflight()?;
        let connect = match options.path() {
            Some(path) => SqliteConnectOptions::new()
                .filename(path)
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal),
            None => SqliteConnectOptions::new().in_memory(true),
        }
        .busy_timeout(options.busy_timeout_value());
        let mut pool = SqlitePoolOptions::new()
            .max_connections(options.pool_size())
            .acquire_timeout(options.busy_timeout_value() + Duration::from_secs(5));
        if options.is_memory() {
            // The database lives and dies with its one connection.
            pool = pool
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None);
        }
        // Processes that open a new database file at the same moment race to switch
        // it to WAL and create the table; SQLite answers the loser SQLITE_BUSY at
        // once (its busy handler is skipped where waiting could deadlock). That is
        // transient: retry within the busy timeout.
        let table = options.table_name();
        let deadline = Instant::now() + options.busy_timeout_value();
        let mut pause = Duration::from_millis(5);
        let pool = loop {
            let opened = open(&pool, &connect, table).await;
            match opened {
                Err(e) if is_busy(e.cause()) && Instant::now() + pause < deadline => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                Err(OpenError::Table(e)) => return Err(db_error(e)),
                Err(OpenError::Connect(e)) => {
                    let place = options
                        .path()
                        .map_or_else(|| ":memory:".to_string(), |p| p.display().to_string());
                    return Err(LockError::Connection {
                        driver: NAME,
                        message: format!("cannot open SQLite database `{place}`: {e}"),
                        source: Some(Box::new(e)),
                    });
                }
                Ok(pool) => break pool,
            }
        };
        Ok(Self {
            pool,
            statements: Arc::new(Statements::new(table)),
            local_wake: local_wake_for(&options),
        })
    }

    /// A write transaction, holding SQLite's write lock from its start (so that
    /// what it reads is what it decides on).
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

    /// One acquire attempt: the grant, or `None` when the key is held.
    async fn try_acquire(&self, req: &AcquireRequest) -> Result<Option<Grant>> {
        if req.mode != LockMode::Exclusive {
            return self.try_acquire_many(req).await;
        }
        let sent = Instant::now();
        let now = monotonic_ms();
        let fence: Option<i64> = sqlx::query_scalar(AssertSqlSafe(self.statements.acquire.clone()))
            .bind(req.key.as_str())
            .bind(req.owner.to_hex())
            .bind(now + ttl_ms(req.ttl))
            .bind(now)
            .bind(req.owner.label())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(fence.map(|f| Grant::of(req, FencingToken(f as u64), sent + req.ttl)))
    }
}

pub(super) fn ttl_ms(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX / 2)
}

#[async_trait]
impl LockDriver for SqliteDriver {
    fn name(&self) -> &'static str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::baseline()
            .with_shared(true)
            .with_permits(true)
            .with_inspect(Inspect::Holders)
    }

    async fn acquire(&self, req: &AcquireRequest) -> Result<Grant> {
        req.require_mode(NAME, self.capabilities())?;
        acquire_polling(req, &self.local_wake, POLL_CAP, || self.try_acquire(req)).await
    }

    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant> {
        let sent = Instant::now();
        let now = monotonic_ms();
        let done = sqlx::query(AssertSqlSafe(self.statements.extend.clone()))
            .bind(key.as_str())
            .bind(owner.to_hex())
            .bind(now + ttl_ms(ttl))
            .bind(now)
            .execute(&self.pool)
            .await
            .map_err(db_error)?;
        if done.rows_affected() == 0 && !self.extend_many_holder(key, owner, ttl).await? {
            return Err(renew::not_ours(key));
        }
        Ok(sent + ttl)
    }

    async fn extend_many(&self, renewals: &[Renewal]) -> Vec<Result<Instant>> {
        renew_in_batches(NAME, renewals, renew::MAX_BATCH, |ttl, batch| async move {
            let table = &self.statements.table;
            let now = monotonic_ms();
            let expires = now + ttl_ms(ttl);
            let statement = sql::extend_many(table, batch.len());
            let mut renewed = self.renew_batch(statement, now, expires, &batch).await?;
            // What the key table did not renew may be shared holds or permits.
            let rest: Vec<usize> = (0..batch.len()).filter(|i| !renewed[*i]).collect();
            if rest.is_empty() {
                return Ok(renewed);
            }
            let others: Vec<Renewal> = rest.iter().map(|i| batch[*i].clone()).collect();
            let statement = sql::extend_many_holders(table, others.len());
            let many = self.renew_batch(statement, now, expires, &others).await?;
            for (i, done) in rest.into_iter().zip(many) {
                if done {
                    renewed[i] = true;
                    self.raise_expiry(batch[i].key.as_str(), expires).await?;
                }
            }
            Ok(renewed)
        })
        .await
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
        self.local_wake.notify_waiters();
        Ok(done.rows_affected() > 0)
    }

    async fn inspect(&self, key: &LockKey) -> Result<Inspection> {
        self.inspect_key(key).await
    }

    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        let done = sqlx::query(AssertSqlSafe(self.statements.release.clone()))
            .bind(key.as_str())
            .bind(owner.to_hex())
            .bind(monotonic_ms())
            .execute(&self.pool)
            .await
            .map_err(db_error)?;
        let released = done.rows_affected() > 0 || self.release_many_holder(key, owner).await?;
        if released {
            self.local_wake.notify_waiters();
        }
        Ok(released)
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
