//! MySQL and MariaDB: `mysql://user:password@host:port/db[?table=NAME&…]`, or
//! `mariadb://…`.
//!
//! # Mapping
//!
//! Each lock is a row of the key table (default `lockkit_locks`, `?table=NAME`);
//! shared holds and semaphore permits, many per key, are rows of
//! `<table>_holders`; waiting acquires queue in `<table>_queue`. They are
//! created on first use (or by `MySqlDriver::migrate`):
//!
//! ```sql
//! CREATE TABLE lockkit_locks (
//!     name VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PRIMARY KEY,
//!     owner CHAR(32),               -- the exclusive holder, '*' while the holders
//!                                   -- table has the holds, NULL when free
//!     fence BIGINT NOT NULL,        -- last fencing token handed out, every mode
//!     expires_at DATETIME(6) NOT NULL,
//!     label TEXT,                   -- the exclusive holder's label
//!     sleeper BIGINT UNSIGNED,      -- the waiter first in line asleep on the
//!                                   -- key's bell: its connection id
//!     readers_until DATETIME(6)     -- a reader may be queued until then
//! ) ENGINE=InnoDB;
//! CREATE TABLE lockkit_locks_holders (
//!     name VARCHAR(512) … , owner CHAR(32) NOT NULL,
//!     mode VARCHAR(8) NOT NULL,     -- 'shared' or 'permit'
//!     lim BIGINT,                   -- a permit's semaphore limit
//!     token BIGINT NOT NULL, expires_at DATETIME(6) NOT NULL, label TEXT,
//!     PRIMARY KEY (name, owner)
//! ) ENGINE=InnoDB;
//! CREATE TABLE lockkit_locks_queue (  -- waiting acquires: see turns.rs
//!     name VARCHAR(512) … , waiter CHAR(32) NOT NULL, mode VARCHAR(9) NOT NULL,
//!     since BIGINT NOT NULL AUTO_INCREMENT,  -- the waiter's place
//!     expires_at DATETIME(6) NOT NULL,
//!     PRIMARY KEY (name, waiter), KEY (since)
//! ) ENGINE=InnoDB;
//! ```
//!
//! All are created on first use with utf8mb4 text, whatever the server's
//! default character set; a table made by an earlier lockkit gets the columns
//! added since at connect, and its `label` turned into utf8mb4.
//!
//! # Invariants
//!
//! What exclusion and fencing rest on, server settings included. Code that
//! relies on one cites its number; each names the test that proves it.
//!
//! 1. **One statement decides.** Every grant comes from one statement that reads
//!    and writes the key's row under InnoDB's row lock: the exclusive upsert
//!    (`sql.rs`'s `acquire`, or `take_free` for a waiter a release woke), or the
//!    shared path's transaction that locks the row first. A wake-up (the bell,
//!    `KILL QUERY`) is only a hint: a waiter it wakes still runs that statement,
//!    and losing the bell's connection slows a hand-off to a poll, never grants.
//!    Proved by the whole conformance suite (`conformance_mysql.rs`); faults on
//!    the bell's connection in the reliability suite
//!    (`mysql_wake_up_connection_killed_around_grants`).
//! 2. **Tokens only grow.** The row's `fence` is bumped by every grant of every
//!    mode and never reset or deleted but by `purge`: `fencing_tokens_increase_across_holders`,
//!    `permit_tokens_increase_across_permits`.
//! 3. **No statement depends on the order the server assigns in.** MariaDB's
//!    `SIMULTANEOUS_ASSIGNMENT` reads every old value; the default reads each
//!    assigned column's new one. Each assignment reads only columns assigned
//!    after it, or a condition with the same answer on the old row and the new
//!    one; nor does any statement depend on `ANSI_QUOTES`, `PIPES_AS_CONCAT`,
//!    `NO_BACKSLASH_ESCAPES` or `ONLY_FULL_GROUP_BY` (`mysql_hostile`: the suite
//!    on a server with all five, which failed cases with the upsert as it was).
//! 4. **Transactions run at REPEATABLE READ**, whatever the server's default:
//!    the shared path sets it for each of its transactions (`mysql_hostile`,
//!    under `SERIALIZABLE`).
//! 5. **Expiry reads one clock, in UTC.** Every lease is judged on the server's
//!    `UTC_TIMESTAMP(6)`, never `NOW(6)`, which follows each session's time zone
//!    (sessions in two zones, or a zone changing for daylight saving, would see
//!    a live lease as expired): `a_lease_holds_for_sessions_in_any_time_zone`.
//!    A jump of the server's clock still moves every expiry; client deadlines
//!    stay monotonic. No statement that writes is unsafe for statement-based
//!    binary logging, so a replica's fence counters stay the primary's under
//!    `binlog_format=STATEMENT`:
//!    `no_statement_is_unsafe_for_statement_based_binary_logging`.
//! 6. **Text is utf8mb4.** Every table, column and bell name is utf8mb4 with a
//!    binary collation, and every connection talks utf8mb4 (`from_pool` refuses
//!    a pool that does not, and the URL takes no `charset`): a key, label or
//!    election value holds any text, emoji included, on a latin1 server
//!    (`unicode_keys_labels_and_values_round_trip` in `mysql_hostile`;
//!    `a_pool_that_does_not_talk_utf8mb4_is_refused`,
//!    `mariadb_turns_a_latin1_label_column_into_utf8mb4`). The binary
//!    collation pads: keys that differ only in trailing spaces are one lock.
//! 7. **A statement reads the queue with one answer.** An exclusive attempt
//!    that reads the key's queue for its turn reads it once, in its upsert; at
//!    READ COMMITTED and stronger every read in one statement sees one snapshot
//!    or holds its locks, so they agree. A pool at READ UNCOMMITTED is refused
//!    with `Config` (`a_pool_at_read_uncommitted_is_refused_and_read_committed_is_taken`);
//!    the rule itself is proven under REPEATABLE READ and SERIALIZABLE by the
//!    suite's FIFO and fair cases (`mysql`, `mysql_hostile`).
//!
//! # How it works
//!
//! - Acquire is one `INSERT … ON DUPLICATE KEY UPDATE`: a key seen for the first
//!   time is created held, with token 1; an existing row is taken only if free,
//!   expired or ours. It returns the new token through `LAST_INSERT_ID(expr)` in
//!   the same reply: 0 when the key is someone else's, which leaves the row as it
//!   was. So a refused attempt is one statement, as a grant is. An attempt waits
//!   for the key row's lock: behind a shared hold's short transaction, or an
//!   application's own transaction on the key table, for at most
//!   `request_timeout_ms`. A deadlock counts as "busy", as on the shared path.
//! - A read (shared) hold or a semaphore permit is one short transaction: lock the
//!   key row (`SELECT … FOR UPDATE`), read its holders, decide by
//!   [`lockkit_core::driver::admit`], bump the counter and record the hold (6
//!   statements with `BEGIN`/`COMMIT`). A deadlock InnoDB reports counts as
//!   "busy" and the waiter tries again. The semaphore's limit is stored with each
//!   permit; a request with another limit fails with `Config`.
//! - Waiting acquires take turns (`turns.rs`): each queues a row after its
//!   first refused attempt, so a stream of readers cannot keep a waiting writer
//!   out, nor a line of writers a reader (`read_write_turns`). The exclusive
//!   upsert carries the writer's rule; the shared path reads the queue under
//!   the key row's lock. A fair exclusive request polls in its place instead of
//!   waiting on the bell. Reading the queue costs the server more than the
//!   rest of the upsert, so a non-fair writer's upsert reads only the key row's
//!   `readers_until`, which each queued reader pushes out past its queue row's
//!   expiry; a free key with a reader possibly queued (until the last one's
//!   queue row would lapse: `turns.rs`) takes a second upsert, which reads the
//!   queue. A lockkit older than that column does not push it: mixed with it, a
//!   newer writer may pass an older reader's queued row (turns, never
//!   exclusion).
//! - There is no `LISTEN/NOTIFY` in MySQL: an exclusive waiter in another process
//!   waits in `GET_LOCK` on the key's *bell*, which a holder that waited for its
//!   lock keeps and rings (`RELEASE_LOCK`) at its release: one waiter wakes, the
//!   first to ask, and attempts at once. A holder that got its lock without
//!   waiting has no bell: the first waiter behind it sleeps on the bell's
//!   connection (after marking the key's row with its connection id), and that
//!   holder's release (its statement reads the mark) ends the sleep with
//!   `KILL QUERY`; the others wait in `GET_LOCK`
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
//! # Server settings
//!
//! - Commits that survive a crash (`innodb_flush_log_at_trx_commit=1`, the
//!   default): the fencing counter is as durable as a commit (see the crate docs).
//! - Any `sql_mode`, session time zone, binary-log format and server character
//!   set is handled, and any isolation level but READ UNCOMMITTED, which is
//!   refused at connect (invariants M3–M7).
//! - For the bell's `KILL QUERY`: the same database user for every client of a
//!   lock, or the privilege to kill others' statements, and no proxy such as
//!   ProxySQL between them; otherwise the first waiter finds a release at its
//!   next look.
//! - For `GET_LOCK` mode, a pool sized for the locks held at once.
//!
//! The URL takes lockkit's options (`table`, `mode`, `key`, the timeouts) and
//! sqlx's own (TLS, `timezone`, …): see `MySqlOptions::from_url`.
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

mod at_once;
mod bell_wait;
mod doorbell;
mod driver;
mod exclusive;
mod first_in_line;
mod get_lock;
mod get_lock_sql;
mod holder_sql;
mod leases;
mod many;
mod migrate;
mod options;
mod queue;
mod queue_sql;
mod sql;
mod transaction_lock;
mod waiting;

pub use driver::MySqlDriver;
pub use options::MySqlOptions;
pub use transaction_lock::{TransactionLock, TransactionLockRequest, TransactionLocks};

use std::sync::Arc;

use lockkit_core::driver::{Driver, DriverEntry, LockDriver};

/// How the `lockkit` facade finds this driver.
pub const DRIVER: DriverEntry = DriverEntry::of::<MySqlDriver>();

/// `mysql://` and `mariadb://` URLs: a [`MySqlDriver`], or with `mode=get_lock` the
/// session-bound `GET_LOCK` driver (see [`connect`]).
impl Driver for MySqlDriver {
    const NAME: &'static str = leases::NAME;
    const URL_SCHEMES: &'static [&'static str] = options::URL.schemes;
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
    on_pool(pool, true, options).await
}

/// The driver on the application's own pool, in the mode `options` asks for.
/// Only `options`' lockkit settings are used (table, mode, keys, timeouts): the
/// pool already says where and who, TLS included.
///
/// The driver takes connections from `pool` as it needs them and gives each
/// back after its statement; in `GET_LOCK` mode it keeps one per held lock (the
/// lock lives as long as that session), so size the pool for the locks held at
/// once. The driver never closes the pool.
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
    on_pool(pool, false, options).await
}

/// The driver on `pool`, which lockkit made (`own`) or the application gave.
async fn on_pool(
    pool: sqlx::MySqlPool,
    own: bool,
    options: MySqlOptions,
) -> lockkit_core::Result<Arc<dyn LockDriver>> {
    check_charset(&pool).await?;
    if options.settings.session_mode {
        return Ok(Arc::new(get_lock::on_pool(pool, options).await?));
    }
    Ok(Arc::new(MySqlDriver::on_pool(pool, own, options).await?))
}

/// Refuses a pool whose connections do not talk utf8mb4 (invariant M6): keys
/// and labels sent in another character set are stored as other text, so two
/// clients set differently would take one lock under two names. lockkit's own
/// pools use sqlx's default, utf8mb4 (the URL takes no `charset`).
async fn check_charset(pool: &sqlx::MySqlPool) -> lockkit_core::Result<()> {
    let (client, connection): (String, String) =
        sqlx::query_as("SELECT @@character_set_client, @@character_set_connection")
            .fetch_one(pool)
            .await
            .map_err(leases::db_error)?;
    if client == "utf8mb4" && connection == "utf8mb4" {
        return Ok(());
    }
    Err(lockkit_core::LockError::Config(format!(
        "the pool's connections use character set {client} (client) and {connection} \
         (connection); lockkit needs utf8mb4, or keys and labels are stored as other text: \
         connect with MySqlConnectOptions::charset(\"utf8mb4\") (sqlx's default)"
    )))
}
