//! [`TransactionLocks`]: locks held by the application's own transaction, from
//! the lock statement until it commits or rolls back.
//!
//! The first seed article's database lock: `SELECT … FOR UPDATE` inside the
//! business transaction, so that the lock and the writes it guards commit or
//! roll back together. Each database's module has the statements; this one has
//! the request, the grant and the errors they share.
//!
//! # When a write needs no fence, and when it does
//!
//! A write to the same database in the same transaction needs no fencing token:
//! it commits only if the transaction does, and the transaction holds the lock
//! until then. No lease can run out under it. A write anywhere else (another
//! database, a service, a file) does not roll back with the transaction, so
//! fence it with [`TransactionLock::token`] as with any lock, and call
//! [`TransactionLock::check`] before it: a transaction that the server ended
//! (a deadlock victim, a killed session) has lost its lock.

use std::fmt;
use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;
use std::time::{Duration, Instant};

use lockkit_core::{FencingToken, LockError, LockKey, OwnerId, Result};
use sqlx::{Database, Pool, Transaction};

use crate::table::{DEFAULT_TABLE, validate_table};

/// Locks that live in the application's own transactions, on the tables named
/// after `table` (`<table>_tx_locks` for the locks' rows, `<table>_fences` for
/// their tokens), which [`new`](Self::new) creates where missing. A type alias
/// in each database's module names it: `lockkit::postgres::TransactionLocks`,
/// `lockkit::mysql::TransactionLocks`, `lockkit::sqlite::TransactionLocks`.
pub struct TransactionLocks<DB: Database> {
    /// Where the tables are made, and tokens bumped outside the transaction
    /// (SQLite bumps them in it).
    pub(crate) pool: Pool<DB>,
    pub(crate) table: String,
    /// MySQL's `innodb_rollback_on_timeout`: a lock wait that times out then
    /// rolls the whole transaction back.
    #[cfg(feature = "mysql")]
    pub(crate) rollback_on_timeout: bool,
    /// Keys whose row is known to exist (MySQL).
    #[cfg(feature = "mysql")]
    pub(crate) rows: KnownRows,
}

/// Keys whose row in `<table>_tx_locks` is known to exist: rows are never
/// deleted, so a key is looked up once per process (until the set fills, and
/// is emptied: it is a cache, bounded at [`Self::MAX`] keys).
#[cfg(feature = "mysql")]
#[derive(Debug, Default)]
pub(crate) struct KnownRows(std::sync::Mutex<std::collections::HashSet<String>>);

#[cfg(feature = "mysql")]
impl KnownRows {
    const MAX: usize = 4096;

    pub(crate) fn contains(&self, key: &LockKey) -> bool {
        lockkit_core::sync::lock(&self.0).contains(key.as_str())
    }

    pub(crate) fn insert(&self, key: &LockKey) {
        let mut known = lockkit_core::sync::lock(&self.0);
        if known.len() >= Self::MAX {
            known.clear();
        }
        known.insert(key.as_str().to_owned());
    }
}

impl<DB: Database> fmt::Debug for TransactionLocks<DB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransactionLocks")
            .field("database", &DB::NAME)
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

/// A database whose transactions take [`TransactionLocks`]: PostgreSQL, MySQL
/// and SQLite, each in its module. Sealed.
pub trait TxDatabase: Database + sealed::Sealed {
    /// Makes `locks`' tables where missing, and reads the server's settings the
    /// locks depend on.
    #[doc(hidden)]
    fn prepare(locks: &mut TransactionLocks<Self>) -> impl Future<Output = Result<()>> + Send;

    /// Takes the lock `request` asks for.
    #[doc(hidden)]
    fn acquire<'t, 'c: 't>(
        request: TransactionLockRequest<'t, 't, 'c, Self>,
    ) -> impl Future<Output = Result<TransactionLock<Self>>> + Send + 't;

    /// Whether `tx` still holds `lock`.
    #[doc(hidden)]
    fn check<'a>(
        lock: &'a TransactionLock<Self>,
        tx: &'a mut Transaction<'_, Self>,
    ) -> impl Future<Output = Result<()>> + Send + 'a;
}

pub(crate) mod sealed {
    /// Keeps [`super::TxDatabase`] to this crate's databases.
    pub trait Sealed {}
}

impl<DB: TxDatabase> TransactionLocks<DB> {
    /// Transaction locks on the tables named after [`DEFAULT_TABLE`], created
    /// where missing.
    ///
    /// # Errors
    ///
    /// [`LockError::Connection`] or [`LockError::Backend`] when the tables
    /// cannot be made; on MySQL, [`LockError::Config`] when the pool's
    /// connections do not talk utf8mb4.
    pub async fn new(pool: Pool<DB>) -> Result<Self> {
        Self::with_table(pool, DEFAULT_TABLE).await
    }

    /// Transaction locks on the tables named after `table`.
    ///
    /// # Errors
    ///
    /// [`LockError::Config`] for a table name that is not a plain identifier;
    /// otherwise as [`new`](Self::new).
    pub async fn with_table(pool: Pool<DB>, table: &str) -> Result<Self> {
        let mut locks = Self {
            pool,
            table: validate_table(table)?,
            #[cfg(feature = "mysql")]
            rollback_on_timeout: false,
            #[cfg(feature = "mysql")]
            rows: KnownRows::default(),
        };
        DB::prepare(&mut locks).await?;
        Ok(locks)
    }
}

impl<'t, 'c: 't, DB: TxDatabase> IntoFuture for TransactionLockRequest<'t, 't, 'c, DB> {
    type Output = Result<TransactionLock<DB>>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send + 't>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(DB::acquire(self))
    }
}

impl<DB: TxDatabase> TransactionLock<DB> {
    /// Checks that `tx` is still the transaction that took the lock, and so
    /// still holds it: PostgreSQL's transaction id, or on MySQL and SQLite the
    /// mark the lock wrote into its row. Call it before a write outside the
    /// transaction.
    ///
    /// # Errors
    ///
    /// [`LockError::Lost`] when the transaction was rolled back or failed (a
    /// deadlock's victim, a serialization failure, a lock wait timeout under
    /// MySQL's `innodb_rollback_on_timeout`: it awaits its rollback), ended, or
    /// lost its connection.
    pub async fn check(&self, tx: &mut Transaction<'_, DB>) -> Result<()> {
        DB::check(self, tx).await
    }
}

impl<DB: Database> TransactionLocks<DB> {
    /// The name the tables are named after.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// A request for `key`'s lock in `tx`; `.await` it. It waits as long as the
    /// server lets a lock wait (see [`TransactionLockRequest::wait_for_server`]),
    /// unless told otherwise.
    pub fn lock<'l, 't, 'c>(
        &'l self,
        tx: &'t mut Transaction<'c, DB>,
        key: impl Into<String>,
    ) -> TransactionLockRequest<'l, 't, 'c, DB> {
        TransactionLockRequest {
            locks: self,
            tx,
            key: key.into(),
            wait: TxWait::Server,
            advisory: false,
        }
    }
}

/// How long a lock statement may wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TxWait {
    /// Not at all: a held lock is [`LockError::Contended`].
    NoWait,
    /// At most this long, then [`LockError::Timeout`].
    AtMost(Duration),
    /// As long as the server's own lock wait timeout allows.
    Server,
}

impl TxWait {
    /// What is left of a bounded wait begun at `started`, in whole
    /// milliseconds rounded up, and at least 1 (0 turns a server's timeout
    /// off): a server that counts from when it starts waiting then gives up no
    /// earlier than the wait's end. `None` for an unbounded or no wait.
    pub(crate) fn millis_left(self, started: Instant) -> Option<u64> {
        let TxWait::AtMost(d) = self else {
            return None;
        };
        let left = d.saturating_sub(started.elapsed());
        let up = left.as_nanos().div_ceil(1_000_000).max(1);
        Some(u64::try_from(up).unwrap_or(u64::MAX / 2))
    }
}

/// A transaction lock being asked for; `.await` it.
///
/// # Cancel safety
///
/// Dropping the future while the lock statement runs leaves the transaction in
/// an unknown state: the lock may still be granted to it, and a bounded wait's
/// savepoint or timeout setting may be left behind. Roll the transaction back
/// (dropping it does).
#[must_use = "a lock request does nothing until it is awaited"]
pub struct TransactionLockRequest<'l, 't, 'c, DB: Database> {
    pub(crate) locks: &'l TransactionLocks<DB>,
    pub(crate) tx: &'t mut Transaction<'c, DB>,
    pub(crate) key: String,
    pub(crate) wait: TxWait,
    pub(crate) advisory: bool,
}

impl<DB: Database> fmt::Debug for TransactionLockRequest<'_, '_, '_, DB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransactionLockRequest")
            .field("key", &self.key)
            .field("wait", &self.wait)
            .field("advisory", &self.advisory)
            .finish_non_exhaustive()
    }
}

impl<DB: Database> TransactionLockRequest<'_, '_, '_, DB> {
    /// Waits at most `wait`, then fails with [`LockError::Timeout`]; the
    /// transaction stays usable (unless MySQL's `innodb_rollback_on_timeout` is
    /// on: then it is rolled back, and the error is [`LockError::Lost`]).
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = TxWait::AtMost(wait);
        self
    }

    /// Does not wait: fails with [`LockError::Contended`] if another
    /// transaction holds the lock.
    pub fn no_wait(mut self) -> Self {
        self.wait = TxWait::NoWait;
        self
    }

    /// Waits as long as the server lets a lock wait (the default): PostgreSQL's
    /// `lock_timeout` (none by default), MySQL's `innodb_lock_wait_timeout` (50
    /// s by default), SQLite's busy timeout. Past it, [`LockError::Timeout`].
    pub fn wait_for_server(mut self) -> Self {
        self.wait = TxWait::Server;
        self
    }
}

/// A lock held by a transaction until it commits or rolls back: there is
/// nothing to release. Its token fences writes made outside the transaction.
pub struct TransactionLock<DB: Database> {
    pub(crate) key: LockKey,
    pub(crate) token: FencingToken,
    /// What identifies the holding transaction: PostgreSQL's transaction id,
    /// or the mark written into the lock's row.
    pub(crate) holder: TxHolder,
    pub(crate) database: PhantomData<fn() -> DB>,
}

/// What [`TransactionLock::check`] compares.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum TxHolder {
    /// PostgreSQL's `txid_current()`.
    #[cfg_attr(not(feature = "postgres"), expect(dead_code, reason = "PostgreSQL's"))]
    Xid(i64),
    /// A random mark written into the lock's row (in `<table>_tx_locks`) by
    /// the holding transaction.
    #[cfg_attr(
        not(any(feature = "mysql", feature = "sqlite")),
        expect(dead_code, reason = "MySQL's and SQLite's")
    )]
    Mark {
        /// The mark.
        mark: OwnerId,
        /// The name the tables are named after.
        table: String,
    },
}

impl<DB: Database> fmt::Debug for TransactionLock<DB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransactionLock")
            .field("key", &self.key)
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

impl<DB: Database> TransactionLock<DB> {
    /// The lock's key.
    pub fn key(&self) -> &LockKey {
        &self.key
    }

    /// The fencing token: higher than any earlier holder's of this key.
    pub fn token(&self) -> FencingToken {
        self.token
    }
}

/// The error for a lock that another transaction holds past the wait.
pub(crate) fn busy(key: &LockKey, wait: TxWait, started: Instant) -> LockError {
    match wait {
        TxWait::NoWait => LockError::Contended {
            key: key.as_str().to_owned(),
        },
        TxWait::AtMost(_) | TxWait::Server => LockError::Timeout {
            key: key.as_str().to_owned(),
            waited: started.elapsed(),
        },
    }
}

/// The error for a transaction the server ended, or left unable to go on: its
/// locks are gone with it.
pub(crate) fn transaction_ended(key: &LockKey, why: impl Into<String>) -> LockError {
    LockError::lost(
        key.as_str(),
        format!("the transaction that held it ended: {}", why.into()),
    )
}

/// A token read back from the database as `BIGINT`.
pub(crate) fn token_of(fence: i64) -> Result<FencingToken, LockError> {
    u64::try_from(fence).map(FencingToken).map_err(|_| {
        LockError::Config(format!(
            "a fences row holds {fence}, not a token: the table was written by hand"
        ))
    })
}

/// The error for a key's row that was made, then gone before it was locked.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn vanished_row(table: &str) -> LockError {
    LockError::Config(format!(
        "a row of `{table}_tx_locks` vanished between its insert and its lock: \
         something deletes that table's rows, which lockkit never does"
    ))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::TxWait;

    #[test]
    fn what_is_left_of_a_wait_rounds_up_to_whole_milliseconds() {
        let started = Instant::now();
        let left = TxWait::AtMost(Duration::from_secs(3600))
            .millis_left(started)
            .unwrap();
        // Some nanoseconds have passed: truncating would give 3_599_999.
        assert_eq!(left, 3_600_000);
        let gone = Instant::now() - Duration::from_secs(1);
        assert_eq!(TxWait::AtMost(Duration::ZERO).millis_left(gone), Some(1));
        assert_eq!(TxWait::NoWait.millis_left(started), None);
        assert_eq!(TxWait::Server.millis_left(started), None);
    }
}
