//! [`SqliteDriver`]: the lease table in a SQLite file, over a sqlx pool.

use lockkit_core::Result;
use sqlx::SqlitePool;

use super::leases::SqliteLeases;
use super::open::{local_wake_for, local_wake_for_file, open, prepare};
use super::options::{DEFAULT_BUSY_TIMEOUT, SqliteOptions};
use crate::lease::LeaseDriver;
use crate::table::validate_table;

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
pub type SqliteDriver = LeaseDriver<SqliteLeases>;

impl LeaseDriver<SqliteLeases> {
    /// Opens (creating if needed) the database and the lease table.
    ///
    /// # Errors
    ///
    /// [`LockError::Config`](lockkit_core::LockError::Config) when the file's
    /// directory does not exist or the path is a directory;
    /// [`LockError::Connection`](lockkit_core::LockError::Connection) when SQLite
    /// cannot open the file.
    pub async fn connect(options: SqliteOptions) -> Result<Self> {
        let pool = open(&options).await?;
        // After opening: the file exists, so its path has one canonical form.
        let local_wake = local_wake_for(&options);
        Ok(Self::new(SqliteLeases::new(
            pool,
            options.table_name(),
            local_wake,
        )))
    }

    /// The driver on the application's own pool, with the lease table `table`
    /// (created if missing).
    ///
    /// Drivers of one file in this process wake each other's waiters at once,
    /// whichever pool they use. The pool's own settings stay the application's:
    /// give it a busy timeout (sqlx's default is 5 s) so that writers queue for the
    /// write lock, and WAL mode so that readers do not wait for writers. An
    /// in-memory pool must have exactly one connection: each connection of
    /// `sqlite::memory:` is a database of its own. The driver never closes the pool.
    ///
    /// # Examples
    ///
    /// ```
    /// use lockkit::Locker;
    /// use lockkit::sqlite::SqliteDriver;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let pool = sqlx::sqlite::SqlitePoolOptions::new()
    ///     .max_connections(1)
    ///     .connect("sqlite::memory:")
    ///     .await?;
    /// let locks = Locker::new(std::sync::Arc::new(
    ///     SqliteDriver::from_pool(pool.clone(), "lockkit_locks").await?,
    /// ));
    /// let guard = locks.lock("orders").await?;
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`LockError::Config`](lockkit_core::LockError::Config) for a bad table
    /// name; a backend error if the tables cannot be created.
    pub async fn from_pool(pool: SqlitePool, table: &str) -> Result<Self> {
        let table = validate_table(table)?;
        let file = prepare(&pool, &table, DEFAULT_BUSY_TIMEOUT).await?;
        let local_wake = local_wake_for_file(file.as_deref());
        Ok(Self::new(SqliteLeases::new(pool, &table, local_wake)))
    }
}
