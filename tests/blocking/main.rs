//! `lockkit::blocking` from plain threads, on embedded SQLite: exclusion and
//! hand-off between threads, release on drop, renewals while the thread works,
//! bounded waits in every mode, elections, jobs, the lost signal, and a clear
//! refusal inside an async runtime.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

mod election;
mod job;
mod locks;
mod lost;
mod modes;
mod refusals;

use std::thread;
use std::time::{Duration, Instant};

use lockkit::blocking::{self, Locker};

/// A fresh database file's URL in `dir`.
fn url(dir: &tempfile::TempDir) -> String {
    format!("sqlite://{}", dir.path().join("locks.db").display())
}

/// A blocking locker on its own connection to `dir`'s database.
fn locker(dir: &tempfile::TempDir) -> Locker {
    blocking::connect(&url(dir)).unwrap()
}

/// Waits until `done` says yes, failing after 10 s with `what`.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < until, "{what}: not within 10 s");
        thread::sleep(Duration::from_millis(5));
    }
}
