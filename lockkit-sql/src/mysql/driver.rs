//! [`MySqlDriver`]: the lease table over a sqlx MySQL pool.

use lockkit_core::{LockError, Result};
use sqlx::AssertSqlSafe;
use sqlx::mysql::MySqlPool;

use super::leases::{MySqlLeases, db_error};
use super::options::MySqlOptions;
use super::{holder_sql, queue_sql, sql};
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
    /// [`LockError::Connection`] if the server
    /// cannot be reached or refuses us.
    pub async fn connect(options: MySqlOptions) -> Result<Self> {
        Self::on_pool(options.pool().await?, true, options).await
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
        Self::on_pool(pool, false, options).await
    }

    /// The lease driver on `pool`, which lockkit made (`own`) or the
    /// application gave.
    pub(super) async fn on_pool(pool: MySqlPool, own: bool, options: MySqlOptions) -> Result<Self> {
        let t = &options.settings.table;
        check_isolation(&pool).await?;
        match options.settings.tables {
            Tables::Create => create_tables(&pool, t).await?,
            Tables::Existing => super::migrate::existing(&pool, t).await?,
        }
        let timeout = options.settings.timeouts.request;
        Ok(Self::new(MySqlLeases::new(pool, own, t, timeout)))
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

/// Creates the key, holders and queue tables if missing, with utf8mb4 labels.
async fn create_tables(pool: &MySqlPool, t: &str) -> Result<()> {
    let ddl = [
        sql::create_table(t),
        holder_sql::create_holders(t),
        queue_sql::create_queue(t),
    ];
    let labelled = [t.to_owned(), format!("{t}_holders")];
    super::migrate::tables(pool, &ddl, &labelled, Some(t))
        .await
        .map_err(db_error)
}

/// Refuses a pool whose connections run at READ UNCOMMITTED (invariant M7):
/// lockkit's statements and the queue's turns are tested at REPEATABLE READ
/// and SERIALIZABLE and run at READ COMMITTED, and a level where a
/// transaction reads rows another has not committed is refused rather than
/// left untested. MariaDB before 11.1 names the setting `tx_isolation`.
async fn check_isolation(pool: &MySqlPool) -> Result<()> {
    let mut level = None;
    for variable in ["@@transaction_isolation", "@@tx_isolation"] {
        let read = sqlx::query_scalar::<_, String>(AssertSqlSafe(format!("SELECT {variable}")))
            .fetch_one(pool)
            .await;
        match read {
            Ok(read) => {
                level = Some(read);
                break;
            }
            Err(e) if is_unknown_variable(&e) => {}
            Err(e) => return Err(db_error(e)),
        }
    }
    match level {
        Some(level) if level.eq_ignore_ascii_case("READ-UNCOMMITTED") => Err(LockError::Config(
            "the pool's connections run at transaction_isolation=READ-UNCOMMITTED, where a \
             lock's statement could read its queue twice with two answers: set \
             transaction_isolation to READ-COMMITTED or stronger (the server's default is \
             REPEATABLE-READ) for lockkit's connections"
                .into(),
        )),
        _ => Ok(()),
    }
}

/// MySQL's error 1193, "unknown system variable".
fn is_unknown_variable(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>())
        .is_some_and(|d| d.number() == 1193)
}
