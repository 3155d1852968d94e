//! SQLite: `sqlite://path`, `sqlite:///absolute/path`, `sqlite::memory:`.
//!
//! # Mapping
//!
//! Each lock is a row of the lease table (default `lockkit_locks`, set with
//! `?table=NAME`) keyed by the lock name as given:
//!
//! ```sql
//! CREATE TABLE lockkit_locks (
//!     name TEXT PRIMARY KEY NOT NULL,  -- the LockKey
//!     owner TEXT,                      -- 32 hex digits, NULL when free
//!     fence INTEGER NOT NULL,          -- last fencing token handed out
//!     expires_at INTEGER NOT NULL      -- ms on CLOCK_MONOTONIC
//! ) WITHOUT ROWID;
//! ```
//!
//! Rows are kept after release so the fencing counter survives; a row is a few dozen
//! bytes.
//!
//! # Guarantees and limits
//!
//! - Acquire, extend and release are each one statement, atomic under SQLite's write
//!   lock; the database runs in WAL mode with a busy timeout, so processes sharing
//!   the file queue for the write lock instead of failing.
//! - Expiries use the machine-wide monotonic clock: all processes sharing a lock file
//!   must run on the same machine (a file on a network share is not supported — by
//!   SQLite either).
//! - Waiters poll with jittered backoff (2 ms doubling to 50 ms); waiters in the same
//!   process as the releaser are woken at once.
//! - `sqlite::memory:` is private to one driver: use it for tests.
//! - Durability follows SQLite's: with `synchronous=NORMAL` in WAL mode a power loss
//!   can roll back the last commits, including a fencing-counter bump.

mod clock;
mod driver;
mod options;
mod sql;

pub use driver::SqliteDriver;
pub use options::{DEFAULT_BUSY_TIMEOUT, SqliteOptions};

use std::sync::Arc;

use lockkit_core::{ConnectFuture, DriverEntry, LockDriver};

/// How the `lockkit` facade finds this driver.
pub const DRIVER: DriverEntry = DriverEntry::new("sqlite", &["sqlite"], "sqlite", connect);

fn connect(url: &str) -> ConnectFuture {
    let options = SqliteOptions::from_url(url);
    Box::pin(async move {
        let driver = SqliteDriver::connect(options?).await?;
        Ok(Arc::new(driver) as Arc<dyn LockDriver>)
    })
}
