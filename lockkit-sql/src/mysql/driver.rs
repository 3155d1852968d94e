//! [`MySqlDriver`]: the lease table over a sqlx MySQL pool.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::{
    AcquireRequest, Capabilities, FencingToken, Grant, LockDriver, LockError, LockKey, OwnerId,
    Result, async_trait,
};
use sqlx::AssertSqlSafe;
use sqlx::mysql::MySqlPool;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::options::MySqlOptions;
use super::sql;
use crate::connect::Within;
use crate::error;
use crate::renew;
use crate::wait::acquire_polling;

const NAME: &str = "mysql";

/// Longest pause between attempts: MySQL has no release notification.
const POLL_CAP: Duration = Duration::from_millis(100);

fn db_error(e: sqlx::Error) -> LockError {
    error::db_error(NAME, e)
}

fn ttl_us(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX / 2)
}

/// Opens the connection pool.
pub(super) async fn pool(options: &MySqlOptions) -> Result<MySqlPool> {
    crate::connect::open_pool::<sqlx::MySql>(NAME, &options.settings, options.connect.clone()).await
}

/// The MySQL/MariaDB lease-table driver. See the [module docs](super).
#[derive(Debug, Clone)]
pub struct MySqlDriver {
    pool: MySqlPool,
    statements: Arc<Statements>,
    /// Wakes this driver's own waiters when it releases.
    wake: Arc<Notify>,
    /// Each statement (`request_timeout_ms`).
    timeout: Duration,
}

#[derive(Debug)]
struct Statements {
    acquire: Arc<str>,
    create_held: Arc<str>,
    extend: Arc<str>,
    release: Arc<str>,
    force_release: Arc<str>,
    purge: Arc<str>,
}

impl MySqlDriver {
    /// Connects and creates the lease table if needed. Always leases:
    /// [`super::connect`] honours `mode=get_lock`.
    ///
    /// # Errors
    ///
    /// [`LockError::Connection`] if the server cannot be reached or refuses us.
    pub async fn connect(options: MySqlOptions) -> Result<Self> {
        let pool = pool(&options).await?;
        let t = &options.settings.table;
        sqlx::query(AssertSqlSafe(sql::create_table(t)))
            .execute(&pool)
            .await
            .map_err(db_error)?;
        Ok(Self {
            pool,
            statements: Arc::new(Statements {
                acquire: sql::acquire(t).into(),
                create_held: sql::create_held(t).into(),
                extend: sql::extend(t).into(),
                release: sql::release(t).into(),
                force_release: sql::force_release(t).into(),
                purge: sql::purge(t).into(),
            }),
            wake: Arc::new(Notify::new()),
            timeout: options.settings.timeouts.request,
        })
    }

    /// Creates the lease table `table` if it is missing (also done by `connect`).
    ///
    /// # Errors
    ///
    /// A backend error, e.g. without the privilege to create tables.
    pub async fn migrate(&self, table: &str) -> Result<()> {
        let table = crate::table::validate_table(table)?;
        sqlx::query(AssertSqlSafe(sql::create_table(&table)))
            .execute(&self.pool)
            .within(self.timeout)
            .await
            .map_err(db_error)
            .map(|_| ())
    }

    async fn try_acquire(&self, req: &AcquireRequest) -> Result<Option<Grant>> {
        let sent = Instant::now();
        let owner = req.owner.to_hex();
        let ttl = ttl_us(req.ttl);
        let grant = |fence: u64| Grant::of(req, FencingToken(fence), sent + req.ttl);
        // One connection for both statements: LAST_INSERT_ID is per connection.
        let mut conn = self.pool.acquire().await.map_err(db_error)?;
        let taken = sqlx::query(AssertSqlSafe(self.statements.acquire.clone()))
            .bind(&owner)
            .bind(ttl)
            .bind(&owner)
            .bind(req.key.as_str())
            .bind(&owner)
            .execute(&mut *conn)
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        if taken.rows_affected() == 1 {
            return Ok(Some(grant(taken.last_insert_id())));
        }
        let created = sqlx::query(AssertSqlSafe(self.statements.create_held.clone()))
            .bind(req.key.as_str())
            .bind(&owner)
            .bind(ttl)
            .execute(&mut *conn)
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        Ok((created.rows_affected() == 1).then(|| grant(1)))
    }
}

#[async_trait]
impl LockDriver for MySqlDriver {
    fn name(&self) -> &'static str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::baseline()
    }

    async fn acquire(&self, req: &AcquireRequest) -> Result<Grant> {
        req.require_mode(NAME, self.capabilities())?;
        acquire_polling(req, &self.wake, POLL_CAP, || self.try_acquire(req)).await
    }

    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant> {
        let sent = Instant::now();
        let done = sqlx::query(AssertSqlSafe(self.statements.extend.clone()))
            .bind(ttl_us(ttl))
            .bind(key.as_str())
            .bind(owner.to_hex())
            .execute(&self.pool)
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        if done.rows_affected() == 0 {
            return Err(renew::not_ours(key));
        }
        Ok(sent + ttl)
    }

    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        let done = sqlx::query(AssertSqlSafe(self.statements.release.clone()))
            .bind(key.as_str())
            .bind(owner.to_hex())
            .execute(&self.pool)
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        let released = done.rows_affected() > 0;
        if released {
            self.wake.notify_waiters();
        }
        Ok(released)
    }

    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        let done = sqlx::query(AssertSqlSafe(self.statements.force_release.clone()))
            .bind(key.as_str())
            .execute(&self.pool)
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        self.wake.notify_waiters();
        Ok(done.rows_affected() > 0)
    }
    async fn purge(&self, key: &LockKey) -> Result<()> {
        sqlx::query(AssertSqlSafe(self.statements.purge.clone()))
            .bind(key.as_str())
            .execute(&self.pool)
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        Ok(())
    }
}
