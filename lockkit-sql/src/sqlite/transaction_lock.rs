//! SQLite's transaction locks ([`TransactionLocks`]). SQLite has one writer at
//! a time: a transaction lock is the database's write lock, taken by writing
//! the key's row of `<table>_tx_locks` (a random mark, and the key's token,
//! bumped), and so **every key excludes every other**: two transactions that
//! lock different keys still run one after the other.
//!
//! The token is bumped inside the transaction (another connection could not
//! write while it holds the write lock): **a transaction that rolls back
//! hands its token out again** to the next holder of the key. Fence with it
//! only writes that roll back with the transaction; for a write elsewhere use
//! a lockkit lock ([`crate::sqlite::SqliteDriver`]) or another backend.
//!
//! Begin the transaction `IMMEDIATE` (`pool.begin_with("BEGIN IMMEDIATE")`), or
//! take the lock before the transaction reads: a deferred transaction that
//! read before another connection wrote can no longer write
//! (`SQLITE_BUSY_SNAPSHOT` in WAL mode), and is reported as [`LockError::Lost`].
//! A bounded wait sets the connection's busy timeout to the wait for the one
//! statement, and puts it back after.

use std::future::Future;
use std::marker::PhantomData;
use std::time::Instant;

use lockkit_core::{LockError, LockKey, OwnerId, Result};
use sqlx::{AssertSqlSafe, Sqlite, SqliteConnection, Transaction};

use super::leases::db_error;
use crate::transaction_lock::{
    self as shared, TxDatabase, TxHolder, TxWait, busy, sealed, token_of, transaction_ended,
};

/// SQLite's [`crate::transaction_lock::TransactionLocks`].
///
/// # Examples
///
/// ```
/// use lockkit::sqlite::TransactionLocks;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = tempfile::tempdir()?;
/// # let url = format!("sqlite://{}?mode=rwc", dir.path().join("shop.db").display());
/// let pool = sqlx::SqlitePool::connect(&url).await?;
/// let locks = TransactionLocks::new(pool.clone()).await?;
///
/// let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
/// let lock = locks.lock(&mut tx, "sku-42").await?;
/// assert_eq!(lock.token().get(), 1);
/// tx.commit().await?; // the lock ends here
/// # Ok(()) }
/// ```
pub type TransactionLocks = shared::TransactionLocks<Sqlite>;

/// A lock held by a transaction of this database: see
/// [`crate::transaction_lock::TransactionLock`].
pub type TransactionLock = shared::TransactionLock<Sqlite>;

/// A request for a [`TransactionLock`], built then awaited: see
/// [`crate::transaction_lock::TransactionLockRequest`].
pub type TransactionLockRequest<'l, 't, 'c> = shared::TransactionLockRequest<'l, 't, 'c, Sqlite>;

impl sealed::Sealed for Sqlite {}

impl TxDatabase for Sqlite {
    async fn prepare(locks: &mut shared::TransactionLocks<Self>) -> Result<()> {
        let table = &locks.table;
        sqlx::query(AssertSqlSafe(format!(
            "CREATE TABLE IF NOT EXISTS {table}_tx_locks (
                name TEXT PRIMARY KEY, holder TEXT NOT NULL, fence INTEGER NOT NULL)"
        )))
        .execute(&locks.pool)
        .await
        .map(drop)
        .map_err(db_error)
    }

    fn acquire<'t, 'c: 't>(
        request: TransactionLockRequest<'t, 't, 'c>,
    ) -> impl Future<Output = Result<TransactionLock>> + Send + 't {
        acquire(request)
    }

    async fn check(lock: &TransactionLock, tx: &mut Transaction<'_, Self>) -> Result<()> {
        let TxHolder::Mark { mark, table } = &lock.holder else {
            return Err(transaction_ended(&lock.key, "it was not taken by SQLite"));
        };
        let holder: Option<String> = sqlx::query_scalar(AssertSqlSafe(format!(
            "SELECT holder FROM {table}_tx_locks WHERE name = ?1"
        )))
        .bind(lock.key.as_str())
        .fetch_optional(&mut **tx)
        .await
        .map_err(db_error)?;
        match holder {
            Some(holder) if holder == mark.to_hex() => Ok(()),
            _ => Err(transaction_ended(&lock.key, "it was rolled back")),
        }
    }
}

async fn acquire(request: TransactionLockRequest<'_, '_, '_>) -> Result<TransactionLock> {
    let key = LockKey::new(request.key)?;
    let t = &request.locks.table;
    let started = Instant::now();
    let conn: &mut SqliteConnection = &mut *request.tx;
    let mark = OwnerId::new();
    let busy_ms = match request.wait {
        TxWait::NoWait => Some(0),
        TxWait::AtMost(_) => request.wait.millis_left(started),
        TxWait::Server => None,
    };
    let before: Option<i64> = match busy_ms {
        Some(ms) => {
            let before = sqlx::query_scalar("PRAGMA busy_timeout")
                .fetch_one(&mut *conn)
                .await
                .map_err(db_error)?;
            set_busy_timeout(conn, ms).await?;
            Some(before)
        }
        None => None,
    };
    let fence: std::result::Result<i64, sqlx::Error> = sqlx::query_scalar(AssertSqlSafe(format!(
        "INSERT INTO {t}_tx_locks (name, holder, fence) VALUES (?1, ?2, 1)
         ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, fence = fence + 1
         RETURNING fence"
    )))
    .bind(key.as_str())
    .bind(mark.to_hex())
    .fetch_one(&mut *conn)
    .await;
    if let Some(before) = before {
        set_busy_timeout(conn, u64::try_from(before).unwrap_or(0)).await?;
    }
    let fence = match fence {
        Ok(fence) => fence,
        Err(e) => return Err(lock_error(&key, e, request.wait, started)),
    };
    Ok(TransactionLock {
        token: token_of(fence)?,
        key,
        holder: TxHolder::Mark {
            mark,
            table: t.clone(),
        },
        database: PhantomData,
    })
}

async fn set_busy_timeout(conn: &mut SqliteConnection, ms: u64) -> Result<()> {
    sqlx::query(AssertSqlSafe(format!("PRAGMA busy_timeout = {ms}")))
        .execute(conn)
        .await
        .map(drop)
        .map_err(db_error)
}

/// The lock statement's error: a stale snapshot ends the transaction's hope
/// of writing ([`LockError::Lost`]); another writer past the wait is busy.
fn lock_error(key: &LockKey, e: sqlx::Error, wait: TxWait, started: Instant) -> LockError {
    let code = e
        .as_database_error()
        .and_then(|d| d.code())
        .and_then(|c| c.parse::<i32>().ok());
    match code {
        // SQLITE_BUSY_SNAPSHOT
        Some(517) => transaction_ended(
            key,
            "it read before another connection wrote, and can no longer write; roll it back \
             and run it again, and begin it IMMEDIATE",
        ),
        // SQLITE_BUSY, SQLITE_LOCKED, with any other extended code
        Some(c) if matches!(c & 0xff, 5 | 6) => busy(key, wait, started),
        _ => db_error(e),
    }
}
