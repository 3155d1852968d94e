//! MySQL and MariaDB: `mysql://user:password@host:port/db[?table=NAME&…]`, or
//! `mariadb://…`.
//!
//! # Mapping
//!
//! Each lock is a row of the key table (default `lockkit_locks`, `?table=NAME`);
//! shared holds and semaphore permits, many per key, are rows of
//! `<table>_holders`. Both are created on first use (or by
//! `MySqlDriver::migrate`):
//!
//! ```sql
//! CREATE TABLE lockkit_locks (
//!     name VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PRIMARY KEY,
//!     owner CHAR(32),               -- the exclusive holder, '*' while the holders
//!                                   -- table has the holds, NULL when free
//!     fence BIGINT NOT NULL,        -- last fencing token handed out, every mode
//!     expires_at DATETIME(6) NOT NULL,
//!     label TEXT                    -- the exclusive holder's label
//! ) ENGINE=InnoDB;
//! CREATE TABLE lockkit_locks_holders (
//!     name VARCHAR(512) … , owner CHAR(32) NOT NULL,
//!     mode VARCHAR(8) NOT NULL,     -- 'shared' or 'permit'
//!     lim BIGINT,                   -- a permit's semaphore limit
//!     token BIGINT NOT NULL, expires_at DATETIME(6) NOT NULL, label TEXT,
//!     PRIMARY KEY (name, owner)
//! ) ENGINE=InnoDB;
//! ```
//!
//! A key table made by an earlier lockkit gets its `label` column at connect.
//!
//! # Guarantees and limits
//!
//! - Acquire is one `INSERT … ON DUPLICATE KEY UPDATE`: a key seen for the first
//!   time is created held, with token 1; an existing row is taken only if free,
//!   expired or ours. Its assignments run left to right (the fencing bump reads the
//!   old owner before it is replaced), and it returns the new token through
//!   `LAST_INSERT_ID(expr)` in the same reply: 0 when the key is someone else's,
//!   which leaves the row as it was. So a refused attempt is one statement, as a
//!   grant is. InnoDB row locks make it atomic. An attempt waits for the key
//!   row's lock, at any isolation level: behind a shared hold's short
//!   transaction, or an application's own transaction on the key table, for at
//!   most `request_timeout_ms`. A deadlock counts as "busy", as on the shared
//!   path.
//! - A read (shared) hold or a semaphore permit is one short transaction: lock the
//!   key row (`SELECT … FOR UPDATE`), read its holders, decide by
//!   [`lockkit_core::driver::admit`], bump the counter and record the hold (6
//!   statements with `BEGIN`/`COMMIT`). A deadlock InnoDB reports counts as
//!   "busy" and the waiter tries again. The semaphore's limit is stored with each
//!   permit; a request with another limit fails with `Config`. Waiters are not
//!   queued: a stream of readers can keep a waiting writer out.
//! - Lease expiry is judged on the **server's wall clock** (`NOW(6)`): a jump of the
//!   database server's clock moves every expiry. Client deadlines stay monotonic.
//! - There is no `LISTEN/NOTIFY` in MySQL: an exclusive waiter in another process
//!   waits in `GET_LOCK` on the key's *bell*, which a holder that waited for its
//!   lock keeps and rings (`RELEASE_LOCK`) at its release: one waiter wakes, the
//!   first to ask, and attempts at once. A holder that got its lock without
//!   waiting has no bell: the first waiter behind it sleeps on the bell's
//!   connection, and that holder's release (its statement reads who holds the
//!   bell) ends the sleep with `KILL QUERY`; the others wait in `GET_LOCK`
//!   behind that one. The first in line looks again every 250 ms at most, for
//!   a release that woke no one (`KILL` needs the same database user, or the
//!   privilege to kill others' statements; not through a proxy: see
//!   `doorbell.rs`). A waiter also looks again when the holder's lease runs
//!   out, and every 2 s. Bells
//!   take connections of their own, outside the pool, at most 8 per driver: one
//!   per waiter while it waits, and one per held lock that was waited for, until
//!   its release; with all 8 in use, further waiters poll. Shared and permit
//!   waiters poll. Waiters of the same driver are also woken at once by its
//!   releases (the first in line by the same `KILL QUERY`). See `doorbell.rs`.
//! - Renewals are one statement per exclusive hold, two per shared hold or permit
//!   (the first finds no exclusive hold).
//!
//! # `GET_LOCK` mode (`?mode=get_lock`)
//!
//! Session-bound `GET_LOCK(SHA1('<table>:<key>'), 0)`: no TTL; the lock lives
//! exactly as long as the holding session (one pooled connection per held lock).
//! The watchdog checks the session; tokens come from a `<table>_fences` counter
//! bumped while the lock is held; waiters poll.
//!
//! - A permit of a semaphore of `limit` takes the first free lock name
//!   `SHA1('<table>:<key>#i')`, `i < limit`, trying 32 names per statement.
//! - Each hold is recorded in `<table>_session_holds` with its `CONNECTION_ID()`;
//!   inspection shows the records whose lock `IS_USED_LOCK` says that connection
//!   holds. A permit request whose limit differs from a live holder's fails with
//!   `Config` (two first holders racing on a free key are not checked against
//!   each other).
//! - **Read-write locks are refused** with `Unsupported`: `GET_LOCK` has no
//!   shared mode. A lock and a semaphore of the same name do not exclude each
//!   other: use different names.
//!
//! # Examples
//!
//! [`MySqlOptions`] reads the URL as `lockkit::connect` does, before it connects:
//!
//! ```
//! use lockkit::mysql::MySqlOptions;
//!
//! let options = MySqlOptions::from_url("mariadb://app:s3cret@db:3306/app?table=job_locks")?;
//! assert_eq!(options.table_name(), "job_locks");
//! assert_eq!(options.pool_size(), 8);
//! assert!(!format!("{options:?}").contains("s3cret"));
//!
//! // `GET_LOCK` mode keeps a connection per held lock: a bigger pool.
//! assert_eq!(MySqlOptions::from_url("mysql://app@db/app?mode=get_lock")?.pool_size(), 32);
//! // PostgreSQL's session mode is not MySQL's.
//! assert!(MySqlOptions::from_url("mysql://app@db/app?mode=advisory").is_err());
//! # Ok::<(), lockkit::LockError>(())
//! ```

mod bell_wait;
mod doorbell;
mod driver;
mod first_in_line;
mod get_lock;
mod get_lock_sql;
mod holder_sql;
mod leases;
mod many;
mod options;
mod sql;
mod waiting;

pub use driver::MySqlDriver;
pub use leases::MySqlLeases;
pub use options::MySqlOptions;

use std::sync::Arc;

use lockkit_core::driver::registry::MYSQL;
use lockkit_core::driver::{Driver, DriverEntry, LockDriver};

/// How the `lockkit` facade finds this driver.
pub const DRIVER: DriverEntry = DriverEntry::of::<MySqlDriver>();

/// `mysql://` and `mariadb://` URLs: a [`MySqlDriver`], or with `mode=get_lock` the
/// session-bound `GET_LOCK` driver (see [`connect`]).
impl Driver for MySqlDriver {
    const NAME: &'static str = MYSQL.name;
    const URL_SCHEMES: &'static [&'static str] = MYSQL.schemes;
    const FEATURE: &'static str = MYSQL.feature;
    type Options = MySqlOptions;

    fn options(url: &str) -> lockkit_core::Result<MySqlOptions> {
        MySqlOptions::from_url(url)
    }

    async fn connect(options: MySqlOptions) -> lockkit_core::Result<Arc<dyn LockDriver>> {
        connect(options).await
    }
}

/// Connects in the mode `options` asks for: leases ([`MySqlDriver`], the default)
/// or session-bound `GET_LOCK` locks (`mode=get_lock`).
///
/// # Errors
///
/// [`lockkit_core::LockError::Connection`] if the server cannot be reached.
pub async fn connect(options: MySqlOptions) -> lockkit_core::Result<Arc<dyn LockDriver>> {
    let pool = options.pool().await?;
    from_pool(pool, options).await
}

/// The driver on the application's own pool, in the mode `options` asks for.
/// Only `options`' lockkit settings are used (table, mode, keys, timeouts): the
/// pool already says where and who, TLS included.
///
/// The driver takes connections from `pool` as it needs them; in `GET_LOCK` mode
/// it keeps one per held lock (the lock lives as long as that session), so size
/// the pool for the locks held at once. The driver never closes the pool.
///
/// # Examples
///
/// ```no_run
/// use lockkit::Locker;
/// use lockkit::mysql::{self, MySqlOptions};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let pool = sqlx::MySqlPool::connect("mysql://app@localhost/app").await?;
/// let options = MySqlOptions::default().table("app_locks")?;
/// let locks = Locker::new(mysql::from_pool(pool.clone(), options).await?);
/// let guard = locks.lock("orders").await?;
/// guard.release().await?;
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// A backend error if the pool cannot reach the server, or may not create
/// lockkit's tables.
pub async fn from_pool(
    pool: sqlx::MySqlPool,
    options: MySqlOptions,
) -> lockkit_core::Result<Arc<dyn LockDriver>> {
    if options.settings.session_mode {
        return Ok(Arc::new(get_lock::on_pool(pool, options).await?));
    }
    Ok(Arc::new(MySqlDriver::from_pool(pool, options).await?))
}
