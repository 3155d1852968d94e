//! SQLite: `sqlite://path`, `sqlite:///absolute/path`, `sqlite::memory:`.
//!
//! # Mapping
//!
//! Each lock is a row of the key table (default `lockkit_locks`, set with
//! `?table=NAME`) keyed by the lock name as given; shared holds and semaphore
//! permits, many per key, are rows of `<table>_holders`:
//!
//! ```sql
//! CREATE TABLE lockkit_locks (
//!     name TEXT PRIMARY KEY NOT NULL,  -- the LockKey
//!     owner TEXT,                      -- the exclusive holder (32 hex digits),
//!                                      -- '*' while the holders table has the holds,
//!                                      -- NULL when free
//!     fence INTEGER NOT NULL,          -- last fencing token handed out, every mode
//!     expires_at INTEGER NOT NULL,     -- ms on CLOCK_MONOTONIC (with '*': the
//!                                      -- latest of the holds')
//!     label TEXT                       -- the exclusive holder's label
//! ) WITHOUT ROWID;
//! CREATE TABLE lockkit_locks_holders (
//!     name TEXT NOT NULL, owner TEXT NOT NULL,
//!     mode TEXT NOT NULL,              -- 'shared' or 'permit'
//!     lim INTEGER,                     -- a permit's semaphore limit
//!     token INTEGER NOT NULL, expires_at INTEGER NOT NULL, label TEXT,
//!     PRIMARY KEY (name, owner)
//! ) WITHOUT ROWID;
//! ```
//!
//! Waiting acquires queue in `<table>_queue` (name, waiter, mode, place, expiry:
//! see `turns.rs`). A table made by an earlier lockkit gets its `label` column at
//! connect. A row is a few dozen bytes.
//!
//! # Invariants
//!
//! What exclusion and fencing rest on, server settings included. Code that
//! relies on one cites its number (S1…); each names the test that proves it:
//! the conformance suite in `conformance_sqlite.rs` (one lock file, a pool per
//! driver, a child process), this crate's tests, and the fault trials of the
//! reliability suite.
//!
//! 1. **One statement or one write transaction decides.** An exclusive acquire,
//!    extend and release is each one statement, atomic under SQLite's write lock;
//!    a shared hold or permit is granted by one `BEGIN IMMEDIATE` transaction,
//!    which holds the write lock while it reads the key's holds and decides by
//!    [`lockkit_core::driver::admit`]. Processes share the file's locks: the
//!    driver opens it in WAL mode with a busy timeout (`busy_timeout_ms`, default
//!    5 s), so writers queue for the lock instead of failing; a pool given to
//!    `from_pool` keeps the application's settings
//!    (`mutual_exclusion_under_contention`, `writer_excludes_readers_and_writers`,
//!    `at_most_limit_permits_under_contention`,
//!    `release_never_deletes_a_newer_holders_lock`,
//!    `a_sqlite_pool_of_the_application_shares_its_file_and_stays_open`).
//! 2. **Tokens only grow.** The key row's `fence` is bumped by every grant of
//!    every mode, and the row is kept after release; nothing but `purge` deletes
//!    it (`fencing_tokens_increase_across_holders`,
//!    `permit_tokens_increase_across_permits`, `sqlite_refuses_a_stale_token`).
//!    Durability is SQLite's: in WAL mode with `synchronous=NORMAL` (the driver's
//!    setting) a power loss can roll back the last commits, a fence bump
//!    included, so tokens can repeat after one (no dedicated test).
//! 3. **Expiry reads one clock, the machine's.** Expiries are milliseconds on
//!    `CLOCK_MONOTONIC`, which every process on a host shares and no jump of the
//!    wall clock moves. A stored expiry is rounded up and "now" down, and the
//!    holder's deadline counts from before its statement, so the holder's lease
//!    ends first. So every process sharing a lock file must run on one machine
//!    (a file on a network share is not supported, by SQLite either)
//!    (`expired_lease_is_reacquirable`,
//!    `abandoned_by_killed_process_is_freed_after_ttl`,
//!    `sqlite_holder_paused_past_its_lease`, `sqlite_holder_killed`;
//!    `a_lease_is_never_over_before_its_ttl_has_passed`). The clock starts again
//!    at boot: a lease written before a reboot stays held until the new clock
//!    passes it (`force_release` frees it; no dedicated test).
//! 4. **A wake-up is only a hint, and only in this process.** A release wakes
//!    the waiters of its key in this process at once; a woken waiter still runs
//!    its statement. Waiters in other processes poll (2 ms doubling to 50 ms,
//!    jittered), so a hand-off across processes costs at most a poll
//!    (`a_sqlite_release_wakes_the_waiters_of_its_key_only_in_this_process`;
//!    no test loses a wake-up).
//!
//! # Guarantees and limits
//!
//! - Every mode: exclusive, shared (read-write locks), semaphore permits; and
//!   inspection of holders (mode, token, lease left, label) and of how many wait.
//! - **Waiters take turns.** A waiting acquire queues a row after its first
//!   refused attempt, and pushes it out every 600 ms while it waits (a dead
//!   waiter's row lapses after 2 s). A reader does not pass a writer queued
//!   ahead of it, nor a writer a reader, so neither side of a read-write lock
//!   starves (`tests/read_write_turns.rs`: 2 writing and 4 reading processes
//!   back to back, writers 68 grants of 201, longest wait 247 ms; without turns
//!   93 of 3283, and a writer waited 2.06 s). A fair request (`.fair()`) passes
//!   no live waiter at all, and a fair `try_lock` takes no key past one.
//!   Requests that are not fair may pass waiters of their own kind.
//! - `sqlite::memory:` is private to one driver: use it for tests.
//! - Options: `?table=NAME&busy_timeout_ms=N` (default 5000); see
//!   [`SqliteOptions`]. [`SqliteDriver::from_pool`] builds the driver on the
//!   application's own pool.
//!
//! # Failure modes
//!
//! **A frozen process.** SQLite's write lock is the database file's, held by
//! whichever process is writing. A process frozen in the middle of a write —
//! SIGSTOP, a debugger, a swap storm during a watchdog renewal's `UPDATE` —
//! keeps it: no other process can acquire, renew or release until it resumes or
//! dies (their statements fail with `database is locked` after
//! `busy_timeout_ms`). No lease can help, and nothing is granted twice: it is a
//! stall, not a safety loss. The reliability trial "holder paused past its lease"
//! freezes the holder right after its grant, which usually lands between its
//! writes; once in a clean CI run it did not (what a freeze during one of the
//! holder's writes produces), and that trial is still to be made to freeze a
//! SQLite holder only between writes.
//!
//! **A power loss** can roll back the last commits, a fence bump included
//! (invariant S2); **a reboot** restarts the clock (S3).
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), lockkit::LockError> {
//! let locker = lockkit::connect("sqlite::memory:").await?;
//! let guard = locker.lock("reports/daily").wait(Duration::from_secs(5)).await?;
//! assert!(locker.try_lock("reports/daily").await.is_err());
//!
//! // Read holds share a key; inspection shows each holder.
//! let readers = (locker.read_lock("catalog").await?, locker.read_lock("catalog").await?);
//! assert_eq!(locker.inspect("catalog").await?.holders.len(), 2);
//! assert!(readers.1.token() > readers.0.token());
//! drop(readers);
//! guard.release().await?;
//! # Ok(()) }
//! ```

mod at_once;
mod clock;
mod driver;
mod leases;
mod many;
mod open;
mod options;
mod sql;
mod transaction_lock;

pub use driver::SqliteDriver;
pub use options::{DEFAULT_BUSY_TIMEOUT, SqliteOptions};
pub use transaction_lock::{TransactionLock, TransactionLockRequest, TransactionLocks};

use std::sync::Arc;

use lockkit_core::driver::{Driver, DriverEntry, LockDriver};

/// How the `lockkit` facade finds this driver.
pub const DRIVER: DriverEntry = DriverEntry::of::<SqliteDriver>();

impl Driver for SqliteDriver {
    const NAME: &'static str = leases::NAME;
    const URL_SCHEMES: &'static [&'static str] = options::SCHEMES;
    type Options = SqliteOptions;

    fn options(url: &str) -> lockkit_core::Result<SqliteOptions> {
        SqliteOptions::from_url(url)
    }

    async fn connect(options: SqliteOptions) -> lockkit_core::Result<Arc<dyn LockDriver>> {
        Ok(Arc::new(SqliteDriver::connect(options).await?))
    }
}
