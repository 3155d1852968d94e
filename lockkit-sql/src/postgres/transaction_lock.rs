//! PostgreSQL's transaction locks ([`TransactionLocks`]), in two forms:
//!
//! - **a row lock** (the default): `SELECT … FOR UPDATE` on the key's row of
//!   `<table>_tx_locks`, a row made on the key's first use;
//! - **an advisory lock** ([`advisory`](TransactionLockRequest::advisory)):
//!   `pg_advisory_xact_lock` on the id advisory mode takes for the key
//!   (`?mode=advisory`), so the two exclude each other.
//!
//! A bounded wait runs inside a savepoint with `lock_timeout` set for the one
//! statement: a wait that runs out rolls back to the savepoint, and the
//! transaction goes on. A deadlock or a serialization failure is left as the
//! server left it, the transaction aborted, and reported as
//! [`LockError::Lost`]: roll back and run the transaction again.
//!
//! The token comes from the key's row of `<table>_fences`, the counter advisory
//! mode bumps, bumped once the lock is held on a connection of the pool given
//! to [`TransactionLocks::new`] and committed at once: a transaction that rolls
//! back does not hand its token out again. That pool needs a connection to
//! spare besides the transaction's.

use std::future::Future;
use std::marker::PhantomData;
use std::time::Instant;

use lockkit_core::{LockError, LockKey, Result};
use sqlx::{AssertSqlSafe, PgConnection, PgPool, Postgres, Transaction};

use super::advisory_sql::{create_fences, id_of};
use super::driver::migrate;
use super::leases::db_error;
use crate::transaction_lock::{
    self as shared, TxDatabase, TxHolder, TxWait, busy, sealed, token_of, transaction_ended,
    vanished_row,
};

/// PostgreSQL's [`crate::transaction_lock::TransactionLocks`].
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use lockkit::postgres::TransactionLocks;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let pool = sqlx::PgPool::connect("postgres://app@127.0.0.1/shop").await?;
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
pub type TransactionLocks = shared::TransactionLocks<Postgres>;

/// A lock held by a transaction of this database: see
/// [`crate::transaction_lock::TransactionLock`].
pub type TransactionLock = shared::TransactionLock<Postgres>;

/// A request for a [`TransactionLock`], built then awaited: see
/// [`crate::transaction_lock::TransactionLockRequest`].
pub type TransactionLockRequest<'l, 't, 'c> = shared::TransactionLockRequest<'l, 't, 'c, Postgres>;

impl sealed::Sealed for Postgres {}

impl TxDatabase for Postgres {
    async fn prepare(locks: &mut shared::TransactionLocks<Self>) -> Result<()> {
        let table = &locks.table;
        let ddl = [
            create_fences(table),
            format!("CREATE TABLE IF NOT EXISTS {table}_tx_locks (name TEXT PRIMARY KEY)"),
        ];
        migrate(&locks.pool, &ddl).await
    }

    fn acquire<'t, 'c: 't>(
        request: TransactionLockRequest<'t, 't, 'c>,
    ) -> impl Future<Output = Result<TransactionLock>> + Send + 't {
        acquire(request)
    }

    async fn check(lock: &TransactionLock, tx: &mut Transaction<'_, Self>) -> Result<()> {
        let xid: std::result::Result<Option<i64>, sqlx::Error> =
            sqlx::query_scalar("SELECT txid_current_if_assigned()")
                .fetch_one(&mut **tx)
                .await;
        match xid {
            Ok(Some(xid)) if TxHolder::Xid(xid) == lock.holder => Ok(()),
            Ok(_) => Err(transaction_ended(&lock.key, "it is no longer open")),
            Err(e) => Err(ended_or(&lock.key, e)),
        }
    }
}

impl shared::TransactionLockRequest<'_, '_, '_, Postgres> {
    /// Takes `pg_advisory_xact_lock` on the key's advisory-mode id instead of
    /// the key's row, so that it excludes advisory mode's holders of the key.
    pub fn advisory(mut self) -> Self {
        self.advisory = true;
        self
    }
}

async fn acquire(request: TransactionLockRequest<'_, '_, '_>) -> Result<TransactionLock> {
    let key = LockKey::new(request.key)?;
    let locks = request.locks;
    let t = &locks.table;
    let started = Instant::now();
    let conn: &mut PgConnection = &mut *request.tx;
    let statements = Statements::new(t, request.advisory, &key);
    let mut rows_made = 0;
    let xid = loop {
        let taken = match request.wait {
            TxWait::NoWait => try_lock(conn, &statements, &key).await?,
            wait => lock_in_savepoint(conn, &statements, &key, wait, started).await?,
        };
        match taken {
            Taken::Xid(xid) => break xid,
            Taken::Busy => return Err(busy(&key, request.wait, started)),
            // Rows are never deleted: a second miss means someone does.
            Taken::NoRow if rows_made == 0 => {
                make_row(&locks.pool, t, &key).await?;
                rows_made += 1;
            }
            Taken::NoRow => return Err(vanished_row(t)),
        }
    };
    let fence: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
        "INSERT INTO {t}_fences AS f (name, fence) VALUES ($1, 1)
         ON CONFLICT (name) DO UPDATE SET fence = f.fence + 1 RETURNING fence"
    )))
    .bind(key.as_str())
    .fetch_one(&locks.pool)
    .await
    .map_err(db_error)?;
    Ok(TransactionLock {
        token: token_of(fence)?,
        key,
        holder: TxHolder::Xid(xid),
        database: PhantomData,
    })
}

/// What one lock statement found.
enum Taken {
    /// The lock is held; the transaction's id.
    Xid(i64),
    /// Another transaction holds it.
    Busy,
    /// The key has no row yet (the row form).
    NoRow,
}

/// The statements of one form. `$1` is the lock's name: the key for a row,
/// advisory mode's `<table>:<key>` for an advisory id.
struct Statements {
    name: String,
    /// Without waiting: the transaction's id if taken, and whether the row
    /// exists.
    try_lock: String,
    /// The lock CTE, `l`, taken after the CTE `s` has run.
    lock_cte: String,
}

impl Statements {
    fn new(t: &str, advisory: bool, key: &LockKey) -> Self {
        if advisory {
            let id = id_of("$1", false);
            Self {
                name: format!("{t}:{}", key.as_str()),
                try_lock: format!(
                    "SELECT CASE WHEN pg_try_advisory_xact_lock({id}) THEN txid_current() END, true"
                ),
                lock_cte: format!("l AS MATERIALIZED (SELECT pg_advisory_xact_lock({id}) FROM s)"),
            }
        } else {
            Self {
                name: key.as_str().to_owned(),
                try_lock: format!(
                    "SELECT (SELECT txid_current() FROM {t}_tx_locks WHERE name = $1
                             FOR UPDATE SKIP LOCKED),
                            EXISTS (SELECT 1 FROM {t}_tx_locks WHERE name = $1)"
                ),
                lock_cte: format!(
                    "l AS MATERIALIZED (SELECT x.name FROM s, {t}_tx_locks x
                                        WHERE x.name = $1 FOR UPDATE OF x)"
                ),
            }
        }
    }

    /// The waiting statement: sets `lock_timeout` to `$2` for the transaction
    /// (when given), takes the lock, and returns the setting as it was, and the
    /// transaction's id (no row: the key has none).
    fn lock(&self, set_timeout: bool) -> String {
        let set = if set_timeout {
            "set_config('lock_timeout', $2, true)"
        } else {
            "''"
        };
        format!(
            "WITH p AS MATERIALIZED (SELECT current_setting('lock_timeout') AS prev),
                  s AS MATERIALIZED (SELECT {set} AS set FROM p),
                  {}
             SELECT p.prev, txid_current() FROM p, l",
            self.lock_cte
        )
    }
}

async fn try_lock(conn: &mut PgConnection, s: &Statements, key: &LockKey) -> Result<Taken> {
    let (xid, row): (Option<i64>, bool) = sqlx::query_as(AssertSqlSafe(s.try_lock.clone()))
        .bind(&s.name)
        .fetch_one(conn)
        .await
        .map_err(|e| ended_or(key, e))?;
    Ok(match (xid, row) {
        (Some(xid), _) => Taken::Xid(xid),
        (None, true) => Taken::Busy,
        (None, false) => Taken::NoRow,
    })
}

const SAVEPOINT: &str = "SAVEPOINT lockkit_lock";
const RELEASE: &str = "RELEASE SAVEPOINT lockkit_lock";
const ROLLBACK_TO: &str = "ROLLBACK TO SAVEPOINT lockkit_lock; RELEASE SAVEPOINT lockkit_lock";

/// Waits for the lock inside a savepoint, with `lock_timeout` set to what is
/// left of a bounded wait; puts the setting back after.
async fn lock_in_savepoint(
    conn: &mut PgConnection,
    s: &Statements,
    key: &LockKey,
    wait: TxWait,
    started: Instant,
) -> Result<Taken> {
    let timeout = wait.millis_left(started).map(|ms| format!("{ms}ms"));
    run(conn, SAVEPOINT, key).await?;
    let mut lock = sqlx::query_as(AssertSqlSafe(s.lock(timeout.is_some()))).bind(&s.name);
    if let Some(timeout) = &timeout {
        lock = lock.bind(timeout);
    }
    let taken: std::result::Result<Option<(String, i64)>, sqlx::Error> =
        lock.fetch_optional(&mut *conn).await;
    match taken {
        Ok(Some((prev, xid))) => {
            if timeout.is_some() {
                sqlx::query("SELECT set_config('lock_timeout', $1, true)")
                    .bind(prev)
                    .execute(&mut *conn)
                    .await
                    .map_err(|e| ended_or(key, e))?;
            }
            run(conn, RELEASE, key).await?;
            Ok(Taken::Xid(xid))
        }
        Ok(None) => {
            run(conn, ROLLBACK_TO, key).await?;
            Ok(Taken::NoRow)
        }
        // lock_not_available: the wait ran out. The transaction goes on.
        Err(e) if sqlstate(&e).as_deref() == Some("55P03") => {
            run(conn, ROLLBACK_TO, key).await?;
            Ok(Taken::Busy)
        }
        Err(e) => {
            let error = ended_or(key, e);
            if !matches!(error, LockError::Lost { .. }) {
                // Not the transaction's end: leave it as it was before.
                run(conn, ROLLBACK_TO, key).await?;
            }
            Err(error)
        }
    }
}

/// Runs a savepoint statement on the simple protocol.
async fn run(conn: &mut PgConnection, sql: &'static str, key: &LockKey) -> Result<()> {
    sqlx::raw_sql(sql)
        .execute(conn)
        .await
        .map(drop)
        .map_err(|e| ended_or(key, e))
}

/// Makes `key`'s row, committed at once on the pool, for the row form to lock.
async fn make_row(pool: &PgPool, t: &str, key: &LockKey) -> Result<()> {
    sqlx::query(AssertSqlSafe(format!(
        "INSERT INTO {t}_tx_locks (name) VALUES ($1) ON CONFLICT (name) DO NOTHING"
    )))
    .bind(key.as_str())
    .execute(pool)
    .await
    .map(drop)
    .map_err(db_error)
}

/// An error of a statement in the transaction: [`LockError::Lost`] where it
/// ended the transaction, or left it unable to go on (a deadlock, a
/// serialization failure, an aborted transaction, a lost connection).
fn ended_or(key: &LockKey, e: sqlx::Error) -> LockError {
    let why = match sqlstate(&e).as_deref() {
        Some("40P01") => "it was chosen as a deadlock's victim; roll it back and run it again",
        Some("40001") => "it cannot be serialized with another; roll it back and run it again",
        Some("25P02") => "an earlier statement failed; it awaits its rollback",
        _ => {
            let mapped = db_error(e);
            return match mapped {
                LockError::Connection { .. } => transaction_ended(
                    key,
                    format!(
                        "its connection failed: {}",
                        lockkit_core::error_chain(&mapped)
                    ),
                ),
                other => other,
            };
        }
    };
    transaction_ended(key, why)
}

/// The SQLSTATE of a server's error.
fn sqlstate(e: &sqlx::Error) -> Option<String> {
    e.as_database_error()
        .and_then(|d| d.code())
        .map(|c| c.into_owned())
}
