//! [`SqliteDriver`]: the lease table in a SQLite file, over a sqlx pool.

use lockkit_core::Result;

use super::leases::SqliteLeases;
use super::open::{local_wake_for, open};
use super::options::SqliteOptions;
use crate::lease::LeaseDriver;

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
}
