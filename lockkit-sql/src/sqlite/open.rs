//! Opening a SQLite database: the pool, the lease table (retried while another
//! process creates it), and the in-process wake-up its drivers share.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use lockkit_core::driver::KeyWakers;
use lockkit_core::sync::lock;
use lockkit_core::{LockError, Result};
use sqlx::AssertSqlSafe;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use tokio::time::Instant;

use super::leases::{NAME, db_error};
use super::options::SqliteOptions;
use super::sql;
use crate::table::{Tables, no_lock_table};

/// One waker per database file, shared by this process's drivers of that file.
fn local_wakers() -> &'static Mutex<HashMap<PathBuf, Weak<KeyWakers>>> {
    static WAKERS: OnceLock<Mutex<HashMap<PathBuf, Weak<KeyWakers>>>> = OnceLock::new();
    WAKERS.get_or_init(Default::default)
}

/// Wakes waiters in this process when a driver of this process releases: the
/// same for every driver of the file (a private one for `:memory:`).
pub(super) fn local_wake_for(options: &SqliteOptions) -> Arc<KeyWakers> {
    local_wake_for_file(options.path())
}

/// [`local_wake_for`] the database file `path` (`None`: in memory, private).
pub(super) fn local_wake_for_file(path: Option<&Path>) -> Arc<KeyWakers> {
    let Some(path) = path else {
        return Arc::default();
    };
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut wakers = lock(local_wakers());
    wakers.retain(|_, w| w.strong_count() > 0);
    if let Some(existing) = wakers.get(&key).and_then(Weak::upgrade) {
        return existing;
    }
    let shared = Arc::new(KeyWakers::default());
    wakers.insert(key, Arc::downgrade(&shared));
    shared
}

/// Where opening the database failed.
enum OpenError {
    /// Opening the file (and its pragmas, such as the switch to WAL).
    Connect(sqlx::Error),
    /// Creating the lease table.
    Table(sqlx::Error),
    /// With `tables=existing`: no lease table.
    NoTable,
}

impl OpenError {
    fn cause(&self) -> Option<&sqlx::Error> {
        match self {
            OpenError::Connect(e) | OpenError::Table(e) => Some(e),
            OpenError::NoTable => None,
        }
    }
}

/// Opens a pool on the database and creates the lease table if it is missing
/// (if `create`; else checks that it is there).
async fn open_once(
    pool: &SqlitePoolOptions,
    connect: &SqliteConnectOptions,
    table: &str,
    create: bool,
) -> std::result::Result<SqlitePool, OpenError> {
    let pool = pool
        .clone()
        .connect_with(connect.clone())
        .await
        .map_err(OpenError::Connect)?;
    if create {
        create_tables(&pool, table)
            .await
            .map_err(OpenError::Table)?;
        return Ok(pool);
    }
    let found: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?")
            .bind(table)
            .fetch_one(&pool)
            .await
            .map_err(OpenError::Table)?;
    match found {
        0 => Err(OpenError::NoTable),
        _ => Ok(pool),
    }
}

/// Creates the key and holders tables if missing, and gives a key table made by
/// an earlier lockkit its `label` column.
async fn create_tables(pool: &SqlitePool, table: &str) -> std::result::Result<(), sqlx::Error> {
    sqlx::query(AssertSqlSafe(sql::create_table(table)))
        .execute(pool)
        .await?;
    let columns: Vec<String> = sqlx::query_scalar(AssertSqlSafe(sql::table_columns(table)))
        .fetch_all(pool)
        .await?;
    if !columns.iter().any(|c| c == "label") {
        // A table made by lockkit before holders had labels.
        sqlx::query(AssertSqlSafe(sql::add_label(table)))
            .execute(pool)
            .await?;
    }
    sqlx::query(AssertSqlSafe(sql::create_holders(table)))
        .execute(pool)
        .await?;
    sqlx::query(AssertSqlSafe(sql::create_queue(table)))
        .execute(pool)
        .await?;
    Ok(())
}

/// Creates lockkit's tables through the application's `pool`, retrying while
/// another process holds the write lock (for at most `busy_timeout`), and returns
/// the database's file (`None` in memory).
pub(super) async fn prepare(
    pool: &SqlitePool,
    table: &str,
    busy_timeout: Duration,
) -> Result<Option<PathBuf>> {
    let deadline = Instant::now() + busy_timeout;
    let mut pause = Duration::from_millis(5);
    loop {
        match create_tables(pool, table).await {
            Err(e) if is_busy(&e) && Instant::now() + pause < deadline => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(100));
            }
            Err(e) => return Err(db_error(e)),
            Ok(()) => break,
        }
    }
    let file: String = sqlx::query_scalar(sql::MAIN_FILE)
        .fetch_one(pool)
        .await
        .map_err(db_error)?;
    Ok((!file.is_empty()).then(|| PathBuf::from(file)))
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

/// Opens (creating if needed) the database and the lease table.
///
/// # Errors
///
/// [`LockError::Config`] when the file's directory does not exist or the path is a
/// directory; [`LockError::Connection`] when SQLite cannot open the file.
pub(super) async fn open(options: &SqliteOptions) -> Result<SqlitePool> {
    options.preflight()?;
    let create = options.tables == Tables::Create;
    let table = options.table_name();
    if let Some(path) = options.path().filter(|p| !create && !p.exists()) {
        let place = format!("`{}` (no such file)", path.display());
        return Err(no_lock_table(table, &place));
    }
    let connect = match options.path() {
        Some(path) => SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(create)
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
    // it to WAL and create the table (invariant S1); SQLite answers the loser
    // SQLITE_BUSY at once (its busy handler is skipped where waiting could
    // deadlock). That is transient: retry within the busy timeout.
    let deadline = Instant::now() + options.busy_timeout_value();
    let mut pause = Duration::from_millis(5);
    loop {
        let opened = open_once(&pool, &connect, table, create).await;
        match opened {
            Err(e) if e.cause().is_some_and(is_busy) && Instant::now() + pause < deadline => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(100));
            }
            Err(OpenError::Table(e)) => return Err(db_error(e)),
            Err(OpenError::NoTable) => {
                let place = options
                    .path()
                    .map_or_else(|| ":memory:".to_string(), |p| p.display().to_string());
                return Err(no_lock_table(table, &format!("`{place}`")));
            }
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
            Ok(pool) => return Ok(pool),
        }
    }
}
