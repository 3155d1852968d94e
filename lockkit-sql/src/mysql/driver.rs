//! [`MySqlDriver`]: the lease table over a sqlx MySQL pool.

use lockkit_core::Result;
use sqlx::mysql::MySqlPool;

use super::leases::{MySqlLeases, db_error};
use super::options::MySqlOptions;
use super::{holder_sql, sql};
use crate::lease::LeaseDriver;
use crate::table::Tables;

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
        Self::from_pool(options.pool().await?, options).await
    }

    /// The lease driver on the application's own pool: creates the lease table if
    /// needed. Only `options`' lockkit settings are used (table, timeouts). See
    /// [`super::from_pool`].
    ///
    /// # Errors
    ///
    /// A backend error if the pool cannot reach the server or may not create the
    /// table.
    pub async fn from_pool(pool: MySqlPool, options: MySqlOptions) -> Result<Self> {
        let t = &options.settings.table;
        match options.settings.tables {
            Tables::Create => create_tables(&pool, t).await?,
            Tables::Existing => super::migrate::existing(&pool, t).await?,
        }
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
        create_tables(&backend.pool, &table).await
    }
}

/// Creates the key and holders tables if missing, with utf8mb4 labels.
async fn create_tables(pool: &MySqlPool, t: &str) -> Result<()> {
    let ddl = [sql::create_table(t), holder_sql::create_holders(t)];
    let labelled = [t.to_owned(), format!("{t}_holders")];
    super::migrate::tables(pool, &ddl, &labelled, Some(t))
        .await
        .map_err(db_error)
}
