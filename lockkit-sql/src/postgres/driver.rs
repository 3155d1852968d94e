//! [`PgDriver`]: the lease table over a sqlx Postgres pool, with a `LISTEN`
//! connection that wakes the waiters of each released key.

use std::sync::Arc;

use lockkit_core::Result;
use sqlx::postgres::PgPool;
use sqlx::{AssertSqlSafe, Row};

use super::leases::{PgLeases, db_error};
use super::listen::Listener;
use super::options::PgOptions;
use super::plans::GenericPlans;
use super::pooler;
use super::{holder_sql, sql, waiter_sql};
use crate::lease::LeaseDriver;
use crate::table::{Tables, no_lock_table, outdated_tables};

/// The PostgreSQL lease-table driver. See the [module docs](super).
pub type PgDriver = LeaseDriver<PgLeases>;

/// The NOTIFY channel for releases on `table`.
pub(super) fn channel(table: &str) -> String {
    format!("lockkit_{table}")
}

/// Runs the `ddl` statements under a transaction-scoped advisory lock (`CREATE
/// TABLE IF NOT EXISTS` can still collide on the catalog when two sessions
/// race), in one plain-text request: one transaction, which any pooler passes.
pub(super) async fn migrate(pool: &PgPool, ddl: &[String]) -> Result<()> {
    let batch = format!(
        "BEGIN; SELECT pg_advisory_xact_lock(hashtext('lockkit-migrate')); {}; COMMIT",
        ddl.join("; ")
    );
    sqlx::raw_sql(AssertSqlSafe(batch))
        .execute(pool)
        .await
        .map_err(db_error)?;
    Ok(())
}

/// Makes the tables `ddl` creates (`tables=create`), or checks that `table`, the
/// first of them, exists (`tables=existing`, which writes nothing).
pub(super) async fn prepare_tables(
    pool: &PgPool,
    tables: Tables,
    ddl: &[String],
    table: &str,
) -> Result<()> {
    match tables {
        Tables::Create => migrate(pool, ddl).await,
        Tables::Existing => require_table(pool, table).await,
    }
}

/// Checks that `table` exists, writing nothing: a `Config` error if it does not.
async fn require_table(pool: &PgPool, table: &str) -> Result<()> {
    // `table` is a validated identifier: letters, digits and `_`.
    let exists = ask(pool, format!("SELECT to_regclass('{table}') IS NOT NULL")).await?;
    match exists {
        true => Ok(()),
        false => Err(no_lock_table(table, "this PostgreSQL database")),
    }
}

/// Whether the lease mode's tables are there as [`schema`] makes them: the
/// holders table, and the newest column of the key and waiters tables. Then
/// connecting runs no DDL: `ALTER TABLE … ADD COLUMN IF NOT EXISTS` takes its
/// table's strongest lock even when the column is there, which stalls every
/// lock statement on the table and can deadlock with one.
async fn schema_is_current(pool: &PgPool, t: &str) -> Result<bool> {
    // `t` is a validated identifier: letters, digits and `_`.
    ask(
        pool,
        format!(
            "SELECT to_regclass('{t}_holders') IS NOT NULL
            AND (SELECT count(*) FROM pg_attribute
                 WHERE NOT attisdropped
                   AND ((attrelid = to_regclass('{t}') AND attname = 'wake_until')
                     OR (attrelid = to_regclass('{t}_waiters') AND attname = 'mode'))) = 2"
        ),
    )
    .await
}

/// The answer to a yes-or-no `question`, asked as plain text: a pooler that
/// connecting has not looked for yet may be in the way, and it can send an
/// unnamed prepared statement's parse and its run to different server
/// connections.
async fn ask(pool: &PgPool, question: String) -> Result<bool> {
    let row = sqlx::raw_sql(AssertSqlSafe(question))
        .fetch_one(pool)
        .await
        .map_err(db_error)?;
    row.try_get(0).map_err(db_error)
}

/// The lease mode's tables: keys, holders of shared holds and permits, and
/// queued waiters.
fn schema(table: &str) -> Vec<String> {
    let mut ddl = sql::create_table(table).to_vec();
    ddl.push(holder_sql::create_holders(table));
    ddl.extend(waiter_sql::create_waiters(table));
    ddl
}

impl LeaseDriver<PgLeases> {
    /// Connects, creates the lease table if needed, and starts listening for
    /// releases. Always leases: [`super::connect`] honours `mode=advisory`.
    ///
    /// # Errors
    ///
    /// [`LockError::Connection`](lockkit_core::LockError::Connection) if the server
    /// cannot be reached or refuses us.
    pub async fn connect(options: PgOptions) -> Result<Self> {
        let plans = GenericPlans::new(&options.settings);
        let pool = options.pool_with(|pool| plans.set_up(pool)).await?;
        Self::on_pool(pool, Some(plans), options).await
    }

    /// The lease driver on the application's own pool: creates the lease table if
    /// needed and starts listening for releases. Only `options`' lockkit settings
    /// are used (table, timeouts); the pool already says where and who. See
    /// [`super::from_pool`] for what the driver takes from the pool.
    ///
    /// # Errors
    ///
    /// A backend error if the pool cannot reach the server or may not create the
    /// table.
    pub async fn from_pool(pool: PgPool, options: PgOptions) -> Result<Self> {
        Self::on_pool(pool, None, options).await
    }

    /// The lease driver on `pool`, which lockkit made (then `own` sets its
    /// sessions up for generic plans) or the application gave (`None`).
    pub(super) async fn on_pool(
        pool: PgPool,
        own: Option<GenericPlans>,
        options: PgOptions,
    ) -> Result<Self> {
        let (t, tables) = (&options.settings.table, options.settings.tables);
        if tables == Tables::Existing {
            require_table(&pool, t).await?;
        }
        if !schema_is_current(&pool, t).await? {
            if tables == Tables::Existing {
                return Err(outdated_tables(t, "PgDriver::migrate"));
            }
            migrate(&pool, &schema(t)).await?;
        }
        let pooled = pooler::transaction_pooler(&pool, &options.settings)
            .await
            .map_err(db_error)?;
        if let Some(plans) = own.as_ref().filter(|_| !pooled) {
            plans.on();
        }
        let channel = channel(t);
        // Behind a transaction-mode pooler, `LISTEN` would register on a server
        // connection others use, and hear nothing: waiters poll.
        let listener = (!pooled).then(|| Listener::shared(&pool, &channel));
        let wakeups = listener
            .as_ref()
            .map_or_else(Arc::default, |l| l.wakeups().clone());
        let timeout = options.settings.timeouts.request;
        Ok(Self::new(PgLeases::new(
            pool,
            own.is_some(),
            t,
            channel,
            wakeups,
            listener,
            timeout,
        )))
    }

    /// Creates the lease table if it is missing (also done by `connect`).
    ///
    /// # Errors
    ///
    /// A backend error, e.g. without the privilege to create tables.
    pub async fn migrate(&self, table: &str) -> Result<()> {
        let ddl = schema(&crate::table::validate_table(table)?);
        migrate(&self.backend().pool, &ddl).await
    }
}
