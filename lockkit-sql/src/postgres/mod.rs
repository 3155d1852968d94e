//! PostgreSQL: `postgres://user:password@host:port/db[?table=NAME&…]`.
//!
//! # Mapping
//!
//! Each lock is a row of the key table (default `lockkit_locks`, `?table=NAME`);
//! shared holds and semaphore permits, many per key, are rows of
//! `<table>_holders`, and waiting exclusive acquires rows of `<table>_waiters`.
//! All are created on first use (or by `PgDriver::migrate`)
//! under an advisory lock so that concurrent first users do not collide:
//!
//! ```sql
//! CREATE TABLE lockkit_locks (
//!     name TEXT PRIMARY KEY,           -- the LockKey
//!     owner TEXT,                      -- the exclusive holder (32 hex digits),
//!                                      -- '*' while the holders table has the holds,
//!                                      -- NULL when free
//!     fence BIGINT NOT NULL,           -- last fencing token handed out, every mode
//!     expires_at TIMESTAMPTZ NOT NULL, -- the server's clock_timestamp() + TTL
//!                                      -- (with '*': the latest of the holds')
//!     label TEXT,                      -- the exclusive holder's label
//!     wake_until TIMESTAMPTZ           -- an exclusive release notifies until then:
//!                                      -- someone waits or watches
//! );
//! CREATE TABLE lockkit_locks_holders (
//!     name TEXT NOT NULL, owner TEXT NOT NULL,
//!     mode TEXT NOT NULL,              -- 'shared' or 'permit'
//!     lim BIGINT,                      -- a permit's semaphore limit
//!     token BIGINT NOT NULL, expires_at TIMESTAMPTZ NOT NULL, label TEXT,
//!     PRIMARY KEY (name, owner)
//! );
//! CREATE TABLE lockkit_locks_waiters (
//!     name TEXT NOT NULL,
//!     waiter TEXT NOT NULL,            -- a random id per waiting exclusive acquire,
//!                                      -- the owner id of a polling waiter
//!     since TIMESTAMPTZ NOT NULL,      -- the queue's order
//!     expires_at TIMESTAMPTZ NOT NULL, -- pushed out while the waiter waits
//!     mode TEXT NOT NULL,              -- 'exclusive', 'shared' or 'permit'
//!     PRIMARY KEY (name, waiter)
//! );
//! ```
//!
//! A key table made by an earlier lockkit gets its `label` and `wake_until`
//! columns at connect, and a waiters table its `mode` column. Tables that are
//! current are left alone: connecting then runs no DDL, whose table lock would
//! stall the lock statements running.
//!
//! # Invariants
//!
//! What exclusion and fencing rest on, server settings included. Code that
//! relies on one cites its number; each names the test that proves it.
//!
//! 1. **One statement decides.** Every grant comes from one statement guarded by
//!    the key's row: the exclusive upsert, or the shared path's transaction that
//!    locks the row first. `NOTIFY` only wakes: a waiter it wakes still runs the
//!    statement, and a lost `LISTEN` connection slows a hand-off to a poll
//!    (125–375 ms), never grants. The whole conformance suite
//!    (`conformance_postgres.rs`); the `LISTEN` connection killed around grants
//!    and releases in the reliability suite
//!    (`postgres_wake_up_connection_killed_around_grants`).
//! 2. **Tokens only grow**: the row's `fence` is bumped by every grant of every
//!    mode and reset by nothing but `purge` (`fencing_tokens_increase_across_holders`).
//! 3. **A session-bound hold keeps its session.** An advisory holder's session
//!    turns `idle_session_timeout` off as it takes its lock (PostgreSQL 14+
//!    would end it, and free the lock, while it waits for the watchdog's next
//!    check); so does the `LISTEN` connection
//!    (`an_idle_advisory_holder_keeps_its_session_past_idle_session_timeout`,
//!    `leases_and_their_waiters_work_under_idle_session_timeout`). A
//!    connection that held an advisory lock goes back to its pool with the
//!    setting off, the application's own with `from_pool` included.
//! 4. **Behind a transaction-mode pooler** (PgBouncer's `pool_mode=transaction`),
//!    nothing depends on the session: statements go as plain text with their
//!    values written in (no prepared statement, which belongs to the server
//!    connection), each one request, or inside one transaction, which the
//!    pooler keeps on one server connection; there is no `LISTEN` (waiters
//!    poll); and advisory mode, whose locks are the session's, is refused with
//!    `Config`. Connecting finds such a pooler unless the URL says
//!    (`?pooler=transaction|none`), and in doubt takes it for one: when
//!    PostgreSQL listens on another port than the URL's (a pooler, a proxy, a
//!    port mapping: `pooler=none` says it shares no sessions), or when its
//!    sessions move between connections (see `pooler.rs`). No startup
//!    parameter PgBouncer refuses is sent (`extra_float_digits`; the URL's
//!    `options` is the user's).
//!    (`through_a_transaction_pooler_statements_go_as_text_and_waiters_poll`,
//!    `advisory_mode_is_refused_behind_a_transaction_pooler`; the whole suite
//!    through PgBouncer, `postgres_pgbouncer`, with PgBouncer's defaults.)
//! 5. **Statements mean what they say at any isolation level.** Each lease
//!    statement is written for READ COMMITTED, where a row's latest version is
//!    re-checked; the shared path's transactions begin at READ COMMITTED
//!    whatever the server's default, and a single statement that fails to
//!    serialize (SERIALIZABLE by default) did nothing and is run again
//!    (`postgres_serializable`: the suite under
//!    `default_transaction_isolation=serializable`).
//!
//! # How it works
//!
//! - An exclusive acquire is one `INSERT … ON CONFLICT DO UPDATE … WHERE
//!   free-or-expired-or-ours RETURNING fence`; extend and release are one statement
//!   each, guarded by the owner. Under READ COMMITTED, Postgres re-checks the
//!   `WHERE` on the latest row version, so two acquirers can never both win. A
//!   waiter's later attempts put the upsert behind `WHERE NOT EXISTS` (held by
//!   someone else, in the statement's snapshot): a refused one inserts nothing, so
//!   it locks no row, takes no transaction id and writes no WAL (a commit flush
//!   per refused attempt before, with `synchronous_commit`).
//! - A read (shared) hold or a semaphore permit is one short transaction: lock the
//!   key row, read its holders, decide by [`lockkit_core::driver::admit`], grant
//!   (4 statements with `BEGIN`/`COMMIT`). Releasing one is a transaction of 2
//!   statements after the exclusive release statement found nothing. Each later
//!   statement reads after the key-row lock was granted, so no two transactions
//!   decide on the same view. The semaphore's limit is stored with each permit; a
//!   request with another limit fails with `Config`.
//! - An exclusive release sends `NOTIFY` with the key in its payload (in the
//!   same statement, delivered at commit), if anyone waits for or watches the
//!   key: while its row's `wake_until` is live. Each waiter pushes it out as it
//!   queues and whenever it pushes its queue row out (to the row's expiry), and
//!   each observer before it reads the key (60 s ahead, again once half has
//!   gone; `watched.rs`). With nobody, a release costs no listener a wake-up.
//!   The release and the push both write the key row, so one sees the other:
//!   a waiter's first push, coming after a release that sent nothing, returns that the key
//!   is free, and the waiter attempts again at once
//!   (`a_release_that_passed_a_joining_waiter_unnotified_still_wakes_it`). A
//!   lockkit older than `wake_until`, on the same table, sets none: its waiters
//!   poll after a newer one's releases. Releases of shared holds and permits,
//!   and force releases, notify always. The drivers of one process that connect alike
//!   (server, user, database, `application_name`) share one `LISTEN`
//!   connection (`listen.rs`), which wakes their waiters and observers of that
//!   key only. Their waiters poll only as a fallback, for a missed notification
//!   or a broken listener, every 125–375 ms.
//! - **Each statement is planned once per connection** on a pool lockkit opened
//!   (`plan_cache_mode = force_generic_plan`, set on each of its connections
//!   once connecting found no transaction-mode pooler; `plans.rs`), by its
//!   keys' indexes (`enable_seqscan = off`, set alike: a plan made while the
//!   waiters table was empty scanned every key's waiters). Left to
//!   itself, PostgreSQL planned the upserts afresh on every run behind a queue
//!   of waiters, at 100–550 µs of server time a plan. The application's pool
//!   (`from_pool`) keeps its own setting
//!   (`a_driver_on_its_own_pool_plans_each_statement_once`,
//!   `through_a_transaction_pooler_no_session_setting_is_left_behind`).
//! - **Exclusive waiters queue**, in `<table>_waiters` (below): an exclusive
//!   acquire whose first attempt is refused adds its row at once (the attempt
//!   again, and the row if refused: one statement). An exclusive release names
//!   the oldest live waiter in its payload (`key`, `U+001F`, waiter), and of the
//!   queued waiters only that one wakes, in whichever driver it is: a release
//!   behind 64 waiters sends one attempt, not 64. The grant deletes the row in
//!   the same statement; a waiter that times out or is cancelled deletes it as
//!   it leaves, and if the key is free then, it passes the wake-up on to the
//!   next waiter (it may have been named by a release it will not answer).
//! - **Waiters take turns** (`turns.rs`): shared and permit waiters, and every
//!   waiter behind a transaction-mode pooler, queue in `<table>_waiters` too,
//!   under their owner id, with their mode, refreshing their row every 600 ms
//!   (it lapses 2 s after). A reader does not pass a writer queued ahead of it,
//!   nor a writer a reader, so neither side of a read-write lock starves
//!   (`tests/read_write_turns.rs`: 2 writing and 4 reading processes back to
//!   back, writers 250 grants of 761, longest wait 83 ms; without turns 28 of
//!   1461, a writer waiting 1.4 s). A fair request (`.fair()`) passes no live
//!   waiter, and a fair `try_lock` takes no key past one; requests that are not
//!   fair may still pass waiters of their own kind. Inspection counts the
//!   waiters.
//!   - A waiter row lives 10 s, and the waiter pushes it out every 5 s (one
//!     write each). A named waiter whose process died leaves the others to their
//!     polls until its row expires (up to 10 s of hand-offs at polling pace);
//!     the next waiter to join, refresh or leave the key's queue sweeps its
//!     expired rows. A key nobody waits on again keeps its dead rows until
//!     `purge`.
//!   - Every process's listener on the table still receives every release's
//!     `NOTIFY` (one channel per table), and PostgreSQL wakes every listening
//!     backend of the database: a release costs the server one wake-up per
//!     listening process, not per driver. Each listener wakes its drivers'
//!     observers and unqueued waiters of the key; only the named waiter's
//!     listener wakes a queued waiter.
//!   - Shared and permit waiters, force releases and advisory mode do not
//!     queue: their releases wake every waiter of the key. A lockkit older than
//!     the queue, on the same table, ignores the named payloads (its waiters
//!     poll) and its releases name no one (everyone wakes).
//! - Lease expiry is judged on the **server's wall clock** (there is no monotonic
//!   clock in SQL): a jump of the database server's clock moves every expiry with it.
//!   The client still measures its own deadline on its monotonic clock from before
//!   each request, so `lost()` never fires late because of a server clock jump;
//!   fencing covers the rest.
//! - The fencing counter lives in the row; it survives restarts and is as durable
//!   as the server's commit settings make it (with `synchronous_commit=off` the last
//!   commits can be lost in a crash).
//! - Renewals of many holds, of every mode, are one statement per TTL
//!   (`UPDATE … FROM unnest(…)` on both tables).
//!
//! # Advisory mode (`?mode=advisory`)
//!
//! Session-bound `pg_try_advisory_lock` on `hashtextextended('<table>:<key>', 0)`:
//! no TTL; the lock lives exactly as long as the holding session (one pooled
//! connection per held lock). The watchdog checks the session, releases NOTIFY
//! waiters, and tokens come from a `<table>_fences` counter bumped while the lock
//! is held.
//!
//! - A read hold is `pg_try_advisory_lock_shared` on the same id.
//! - A permit of a semaphore of `limit` takes the first free slot id
//!   `hashtextextended('<table>:<key>#i', 0)`, `i < limit`, and the key's own id
//!   shared (so it excludes a writer), in one statement.
//! - Each hold is recorded in `<table>_session_holds` with its session's pid;
//!   inspection shows the records whose session `pg_locks` shows holding the
//!   lock. A permit request whose limit differs from a live holder's fails with
//!   `Config`. Two first holders with different limits racing on a free key can
//!   both be granted: the check reads the records, it does not lock them.
//! - A read hold and a permit of the same key do not exclude each other (both
//!   hold the key's id shared): use different keys for different primitives.
//!
//! # Server settings
//!
//! - Commits that survive a crash (`synchronous_commit` on, the default): the
//!   fencing counter is as durable as a commit (see the crate docs).
//! - `idle_session_timeout`, a transaction-mode pooler and any default isolation
//!   level are handled (invariants P3–P5); advisory mode is refused behind such a
//!   pooler.
//! - For advisory mode, a pool sized for the locks held at once.
//!
//! The URL takes lockkit's options (`table`, `mode`, `key`, `pooler`, the
//! timeouts) and sqlx's own (TLS, `application_name`, …): see
//! `PgOptions::from_url`.
//!
//! # Examples
//!
//! [`PgOptions`] reads the URL as `lockkit::connect` does, before it connects:
//!
//! ```
//! use lockkit::postgres::PgOptions;
//!
//! let url = "postgres://app:s3cret@db:5432/app?table=job_locks&mode=advisory";
//! let options = PgOptions::from_url(url)?;
//! assert_eq!(options.table_name(), "job_locks");
//! assert_eq!(options.pool_size(), 32); // advisory: a session per held lock
//! assert!(!format!("{options:?}").contains("s3cret"));
//!
//! let err = PgOptions::from_url("postgres://db/app?tabel=job_locks").unwrap_err();
//! assert!(err.to_string().contains("did you mean `table`?"), "{err}");
//! # Ok::<(), lockkit::LockError>(())
//! ```

mod advisory;
mod advisory_sql;
mod at_once;
mod driver;
mod holder_sql;
mod leases;
mod listen;
mod many;
mod options;
mod plans;
mod pooler;
mod queue;
mod sql;
mod take;
mod transaction_lock;
mod waiter_sql;
mod watched;
mod wire;

pub use driver::PgDriver;
pub use options::PgOptions;
pub use transaction_lock::{TransactionLock, TransactionLockRequest, TransactionLocks};

use std::sync::Arc;

use lockkit_core::driver::{Driver, DriverEntry, LockDriver};

/// How the `lockkit` facade finds this driver.
pub const DRIVER: DriverEntry = DriverEntry::of::<PgDriver>();

/// `postgres://` and `postgresql://` URLs: a [`PgDriver`], or with
/// `mode=advisory` the session-bound advisory-lock driver (see [`connect`]).
impl Driver for PgDriver {
    const NAME: &'static str = leases::NAME;
    const URL_SCHEMES: &'static [&'static str] = options::URL.schemes;
    type Options = PgOptions;

    fn options(url: &str) -> lockkit_core::Result<PgOptions> {
        PgOptions::from_url(url)
    }

    async fn connect(options: PgOptions) -> lockkit_core::Result<Arc<dyn LockDriver>> {
        connect(options).await
    }
}

/// Connects in the mode `options` asks for: leases ([`PgDriver`], the default) or
/// session-bound advisory locks (`mode=advisory`).
///
/// # Errors
///
/// [`lockkit_core::LockError::Connection`] if the server cannot be reached.
pub async fn connect(options: PgOptions) -> lockkit_core::Result<Arc<dyn LockDriver>> {
    if options.settings.session_mode {
        return Ok(Arc::new(
            advisory::on_pool(options.pool().await?, options).await?,
        ));
    }
    Ok(Arc::new(PgDriver::connect(options).await?))
}

/// The driver on the application's own pool, in the mode `options` asks for.
/// Only `options`' lockkit settings are used (table, mode, keys, timeouts): the
/// pool already says where and who, TLS included.
///
/// The driver takes connections from `pool` as it needs them, gives each back
/// after its statement, and in advisory mode keeps one per held lock (the lock
/// lives as long as that session): size the pool for that. Its `LISTEN` connection is not the pool's: one per process
/// for the drivers that connect alike, made with the pool's settings. The
/// driver never closes the pool; dropping the driver gives its connections
/// back.
///
/// # Examples
///
/// ```no_run
/// use lockkit::Locker;
/// use lockkit::postgres::{self, PgOptions};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let pool = sqlx::PgPool::connect("postgres://app@localhost/app").await?;
/// let locks = Locker::new(postgres::from_pool(pool.clone(), PgOptions::default()).await?);
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
    pool: sqlx::PgPool,
    options: PgOptions,
) -> lockkit_core::Result<Arc<dyn LockDriver>> {
    if options.settings.session_mode {
        return Ok(Arc::new(advisory::on_pool(pool, options).await?));
    }
    Ok(Arc::new(PgDriver::from_pool(pool, options).await?))
}
