//! MySQL's and MariaDB's transaction locks ([`TransactionLocks`]): the lock is
//! the key's row of `<table>_tx_locks`, locked by writing a random mark into it
//! (`UPDATE`, a locking read under every isolation level), or, without
//! waiting, by `SELECT … FOR UPDATE NOWAIT` first. The mark is how
//! [`TransactionLock::check`] knows the transaction is still the one that took
//! the lock: InnoDB rolls a deadlock's victim back whole, and the connection
//! then goes on in autocommit.
//!
//! A bounded wait sets the session's `innodb_lock_wait_timeout` for the lock
//! statement and puts it back after. The server counts that timeout in whole
//! seconds: a wait is rounded up to the next second (at least one).
//!
//! Keys are sent as bytes and read as utf8mb4 by the statement, whatever the
//! transaction's connection's character set. The token comes from the key's row
//! of `<table>_fences`, the counter `GET_LOCK` mode bumps, bumped once the lock
//! is held on a connection of the pool given to [`TransactionLocks::new`]
//! (utf8mb4, checked there) and committed at once: a transaction that rolls
//! back does not hand its token out again. That pool needs a connection to
//! spare besides the transaction's.

use std::future::Future;
use std::marker::PhantomData;
use std::time::Instant;

use lockkit_core::{LockError, LockKey, OwnerId, Result};
use sqlx::mysql::MySqlDatabaseError;
use sqlx::{AssertSqlSafe, MySql, MySqlConnection, MySqlPool, Transaction};

use super::get_lock_sql::create_fences;
use super::leases::db_error;
use super::sql::TEXT;
use crate::transaction_lock::{
    self as shared, TxDatabase, TxHolder, TxWait, busy, sealed, token_of, transaction_ended,
    vanished_row,
};

/// MySQL's and MariaDB's [`crate::transaction_lock::TransactionLocks`].
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use lockkit::mysql::TransactionLocks;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let pool = sqlx::MySqlPool::connect("mysql://app@127.0.0.1/shop").await?;
/// let locks = TransactionLocks::new(pool.clone()).await?;
///
/// let mut tx = pool.begin().await?;
/// let lock = locks.lock(&mut tx, "sku-42").wait(Duration::from_secs(2)).await?;
/// sqlx::query("UPDATE inventory SET stock = stock - 1 WHERE sku = 'sku-42'")
///     .execute(&mut *tx)
///     .await?;
/// tx.commit().await?; // the lock ends here
/// # let _ = lock.token();
/// # Ok(()) }
/// ```
pub type TransactionLocks = shared::TransactionLocks<MySql>;

/// A lock held by a transaction of this database: see
/// [`crate::transaction_lock::TransactionLock`].
pub type TransactionLock = shared::TransactionLock<MySql>;

/// A request for a [`TransactionLock`], built then awaited: see
/// [`crate::transaction_lock::TransactionLockRequest`].
pub type TransactionLockRequest<'l, 't, 'c> = shared::TransactionLockRequest<'l, 't, 'c, MySql>;

impl sealed::Sealed for MySql {}

impl TxDatabase for MySql {
    async fn prepare(locks: &mut shared::TransactionLocks<Self>) -> Result<()> {
        let (pool, table) = (&locks.pool, &locks.table);
        super::check_charset(pool).await?;
        let ddl = [
            create_fences(table),
            format!(
                "CREATE TABLE IF NOT EXISTS {table}_tx_locks (
                    name VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
                    holder CHAR(32) NOT NULL DEFAULT ''
                ) ENGINE=InnoDB {TEXT}"
            ),
        ];
        super::migrate::tables(pool, &ddl, &[], None)
            .await
            .map_err(db_error)?;
        let rollback_on_timeout: i64 =
            sqlx::query_scalar("SELECT @@innodb_rollback_on_timeout + 0")
                .fetch_one(pool)
                .await
                .map_err(db_error)?;
        locks.rollback_on_timeout = rollback_on_timeout != 0;
        Ok(())
    }

    fn acquire<'t, 'c: 't>(
        request: TransactionLockRequest<'t, 't, 'c>,
    ) -> impl Future<Output = Result<TransactionLock>> + Send + 't {
        acquire(request)
    }

    async fn check(lock: &TransactionLock, tx: &mut Transaction<'_, Self>) -> Result<()> {
        let TxHolder::Mark { mark, table } = &lock.holder else {
            return Err(transaction_ended(&lock.key, "it was not taken by MySQL"));
        };
        let holder: std::result::Result<Option<String>, sqlx::Error> =
            sqlx::query_scalar(AssertSqlSafe(format!(
                "SELECT holder FROM {table}_tx_locks WHERE name = CONVERT(? USING utf8mb4)"
            )))
            .bind(lock.key.as_str().as_bytes())
            .fetch_optional(&mut **tx)
            .await;
        match holder {
            Ok(Some(holder)) if holder == mark.to_hex() => Ok(()),
            Ok(_) => Err(transaction_ended(&lock.key, "it was rolled back")),
            Err(e) => Err(ended_or(&lock.key, e, false)),
        }
    }
}

async fn acquire(request: TransactionLockRequest<'_, '_, '_>) -> Result<TransactionLock> {
    let key = LockKey::new(request.key)?;
    let locks = request.locks;
    let t = &locks.table;
    let started = Instant::now();
    let conn: &mut MySqlConnection = &mut *request.tx;
    let mark = OwnerId::new();
    if !locks.rows.contains(&key) {
        make_row(&locks.pool, t, &key).await?;
        locks.rows.insert(&key);
    }
    let taken = match request.wait {
        TxWait::NoWait => try_lock(conn, t, &key, &mark).await,
        wait => lock(conn, t, &key, &mark, wait, started).await,
    };
    match taken {
        Ok(true) => {}
        Ok(false) => return Err(vanished_row(t)),
        Err(e) if is_lock_wait(&e) && !rolled_back(&e, locks.rollback_on_timeout) => {
            return Err(busy(&key, request.wait, started));
        }
        Err(e) => return Err(ended_or(&key, e, locks.rollback_on_timeout)),
    }
    let bumped = sqlx::query(AssertSqlSafe(super::get_lock_sql::bump_fence(t)))
        .bind(key.as_str())
        .execute(&locks.pool)
        .await
        .map_err(db_error)?;
    let fence = i64::try_from(bumped.last_insert_id()).unwrap_or(-1);
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

/// Writes the mark into the key's row (a record lock only: the row exists):
/// `false` when the key has no row.
async fn write_mark(
    conn: &mut MySqlConnection,
    t: &str,
    key: &LockKey,
    mark: &OwnerId,
) -> std::result::Result<bool, sqlx::Error> {
    let written = sqlx::query(AssertSqlSafe(format!(
        "UPDATE {t}_tx_locks SET holder = ? WHERE name = CONVERT(? USING utf8mb4)"
    )))
    .bind(mark.to_hex())
    .bind(key.as_str().as_bytes())
    .execute(conn)
    .await?;
    Ok(written.rows_affected() == 1)
}

/// Without waiting: a held row fails as a lock wait ([`is_lock_wait`]).
async fn try_lock(
    conn: &mut MySqlConnection,
    t: &str,
    key: &LockKey,
    mark: &OwnerId,
) -> std::result::Result<bool, sqlx::Error> {
    let row = sqlx::query(AssertSqlSafe(format!(
        "SELECT 1 FROM {t}_tx_locks WHERE name = CONVERT(? USING utf8mb4) FOR UPDATE NOWAIT"
    )))
    .bind(key.as_str().as_bytes())
    .fetch_optional(&mut *conn)
    .await?;
    match row {
        Some(_) => write_mark(conn, t, key, mark).await,
        None => Ok(false),
    }
}

/// Waits for the row, with the session's lock wait timeout set to what is left
/// of a bounded wait, and put back after.
async fn lock(
    conn: &mut MySqlConnection,
    t: &str,
    key: &LockKey,
    mark: &OwnerId,
    wait: TxWait,
    started: Instant,
) -> std::result::Result<bool, sqlx::Error> {
    let TxWait::AtMost(d) = wait else {
        return write_mark(conn, t, key, mark).await;
    };
    let left = d.saturating_sub(started.elapsed());
    let seconds = left.as_secs() + u64::from(left.subsec_nanos() > 0);
    sqlx::query(
        "SET @lockkit_lock_wait = @@SESSION.innodb_lock_wait_timeout,
             SESSION innodb_lock_wait_timeout = ?",
    )
    .bind(seconds.max(1))
    .execute(&mut *conn)
    .await?;
    let taken = write_mark(conn, t, key, mark).await;
    let restored = sqlx::query("SET SESSION innodb_lock_wait_timeout = @lockkit_lock_wait")
        .execute(&mut *conn)
        .await;
    let taken = taken?;
    restored?;
    Ok(taken)
}

/// Whether a lock wait's error rolled the whole transaction back: a timeout
/// (1205) under `innodb_rollback_on_timeout`.
fn rolled_back(e: &sqlx::Error, rollback_on_timeout: bool) -> bool {
    rollback_on_timeout && number(e) == Some(1205)
}

/// MySQL's server error number, if the error is the server's.
fn number(e: &sqlx::Error) -> Option<u16> {
    e.as_database_error()?
        .try_downcast_ref::<MySqlDatabaseError>()
        .map(MySqlDatabaseError::number)
}

/// A lock wait that ran out (1205, and MariaDB's `NOWAIT`) or was refused
/// (MySQL's `NOWAIT`, 3572).
fn is_lock_wait(e: &sqlx::Error) -> bool {
    matches!(number(e), Some(1205 | 3572))
}

/// Makes `key`'s row where it is missing, committed at once on the pool,
/// before the transaction locks it. The row must exist first: under
/// `REPEATABLE READ`, a locking statement that finds no row locks the gap where
/// it would be, and inserts into that gap (this one, and other keys' first
/// inserts) would wait for the transaction. Looked up without a lock first, as
/// an insert of a row another transaction has locked waits for it.
async fn make_row(pool: &MySqlPool, t: &str, key: &LockKey) -> Result<()> {
    let found: Option<i32> = sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT 1 FROM {t}_tx_locks WHERE name = ?"
    )))
    .bind(key.as_str())
    .fetch_optional(pool)
    .await
    .map_err(db_error)?;
    if found.is_none() {
        sqlx::query(AssertSqlSafe(format!(
            "INSERT IGNORE INTO {t}_tx_locks (name) VALUES (?)"
        )))
        .bind(key.as_str())
        .execute(pool)
        .await
        .map_err(db_error)?;
    }
    Ok(())
}

/// An error of a statement in the transaction: [`LockError::Lost`] where it
/// rolled the transaction back (a deadlock; a lock wait timeout under
/// `innodb_rollback_on_timeout`) or its connection failed.
fn ended_or(key: &LockKey, e: sqlx::Error, rollback_on_timeout: bool) -> LockError {
    match number(&e) {
        Some(1213) => transaction_ended(
            key,
            "it was chosen as a deadlock's victim and rolled back; run it again",
        ),
        Some(1205) if rollback_on_timeout => transaction_ended(
            key,
            "its lock wait timed out, and innodb_rollback_on_timeout rolled it back",
        ),
        _ => match db_error(e) {
            mapped @ LockError::Connection { .. } => transaction_ended(
                key,
                format!(
                    "its connection failed: {}",
                    lockkit_core::error_chain(&mapped)
                ),
            ),
            other => other,
        },
    }
}
