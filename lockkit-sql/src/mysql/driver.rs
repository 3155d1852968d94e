//! [`MySqlDriver`]: the lease table over a sqlx MySQL pool.

use lockkit_core::Result;
use sqlx::AssertSqlSafe;

use super::leases::{MySqlLeases, db_error};
use super::options::MySqlOptions;
use super::sql;
use crate::connect::Within;
use crate::lease::LeaseDriver;

/// The MySQL/MariaDB lease-table driver. See the [module docs](super).
pub type MySqlDriver = LeaseDriver<MySqlLeases>;

impl LeaseDriver<MySqlLeases> {
    /// Connects and creates the lease table if needed. Always leases:
    /// [`super::connect`] honours `mode=get_lock`.
    ///
    /// # Errors
    ///
    /// [`LockError::Connection`](lockkit_core::LockError::Connection) if the server
    /// cannot be reached or refuses us.
    pub async fn connect(options: MySqlOptions) -> Result<Self> {
        let pool = options.pool().await?;
        let t = &options.settings.table;
        sqlx::query(AssertSqlSafe(sql::create_table(t)))
            .execute(&pool)
            .await
            .map_err(db_error)?;
        let timeout = options.settings.timeouts.request;
        Ok(Self::new(MySqlLeases::new(pool, t, timeout)))
    }

    /// Creates the lease table `table` if it is missing (also done by `connect`).
    ///
    /// # Errors
    ///
    /// A backend error, e.g. without the privilege to create tables.
    pub async fn migrate(&self, table: &str) -> Result<()> {
        let table = crate::table::validate_table(table)?;
        let backend = self.backend();
        sqlx::query(AssertSqlSafe(sql::create_table(&table)))
            .execute(&backend.pool)
            .within(backend.timeout)
            .await
            .map_err(db_error)
            .map(|_| ())
    }
}
