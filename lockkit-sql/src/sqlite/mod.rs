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
//! A table made by an earlier lockkit gets its `label` column at connect. Key rows
//! are kept after release so the fencing counter survives; a row is a few dozen
//! bytes.
//!
//! # Guarantees and limits
//!
//! - An exclusive acquire, extend and release are each one statement, atomic under
//!   SQLite's write lock; a shared or permit acquire is one `BEGIN IMMEDIATE`
//!   transaction that reads the key's holds and decides by
//!   [`lockkit_core::driver::admit`]. The database runs in WAL mode with a busy
//!   timeout, so processes sharing the file queue for the write lock instead of
//!   failing.
//! - Every mode: exclusive, shared (read-write locks), semaphore permits; and
//!   inspection of holders (mode, token, lease left, label). Waiters are not queued
//!   (they poll), so they are not served in order, and a stream of readers can keep
//!   a waiting writer out.
//! - Expiries use the machine-wide monotonic clock: all processes sharing a lock file
//!   must run on the same machine (a file on a network share is not supported — by
//!   SQLite either).
//! - Waiters poll with jittered backoff (2 ms doubling to 50 ms); waiters in the same
//!   process as the releaser are woken at once.
//! - `sqlite::memory:` is private to one driver: use it for tests.
//! - Durability follows SQLite's: with `synchronous=NORMAL` in WAL mode a power loss
//!   can roll back the last commits, including a fencing-counter bump.
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

mod clock;
mod driver;
mod leases;
mod many;
mod open;
mod options;
mod sql;

pub use driver::SqliteDriver;
pub use leases::SqliteLeases;
pub use options::{DEFAULT_BUSY_TIMEOUT, SqliteOptions};

use std::sync::Arc;

use lockkit_core::driver::registry::SQLITE;
use lockkit_core::driver::{Driver, DriverEntry, LockDriver};

/// How the `lockkit` facade finds this driver.
pub const DRIVER: DriverEntry = DriverEntry::of::<SqliteDriver>();

impl Driver for SqliteDriver {
    const NAME: &'static str = SQLITE.name;
    const URL_SCHEMES: &'static [&'static str] = SQLITE.schemes;
    const FEATURE: &'static str = SQLITE.feature;
    type Options = SqliteOptions;

    fn options(url: &str) -> lockkit_core::Result<SqliteOptions> {
        SqliteOptions::from_url(url)
    }

    async fn connect(options: SqliteOptions) -> lockkit_core::Result<Arc<dyn LockDriver>> {
        Ok(Arc::new(SqliteDriver::connect(options).await?))
    }
}
