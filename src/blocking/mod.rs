//! A blocking API over [`crate::Locker`], for programs without an async runtime
//! (the `blocking` feature), as `reqwest::blocking` is for reqwest.
//!
//! A [`Locker`] owns a small Tokio runtime (one worker thread) that carries the
//! connection, the watchdog's renewals and the lost signals while the calling
//! thread works. Every call blocks the calling thread until it is done. A
//! [`LockGuard`] releases its lock when it is dropped, and the drop returns once
//! the backend has answered (or after 10 s, when the lease covers the rest).
//!
//! The blocking API is for threads that are not running async code: called from
//! inside an async runtime, it refuses with [`LockError::Config`] instead of
//! blocking that runtime's thread.
//!
//! # Examples
//!
//! ```
//! # fn main() -> Result<(), lockkit::LockError> {
//! # let dir = tempfile::tempdir().map_err(|e| lockkit::LockError::Config(e.to_string()))?;
//! # let url = format!("sqlite://{}", dir.path().join("locks.db").display());
//! let locker = lockkit::blocking::connect(&url)?; // e.g. "sqlite://locks.db"
//! let guard = locker.lock("report:daily")?;
//! println!("writing the report with fencing token {}", guard.token());
//! assert!(locker.try_lock("report:daily").is_err()); // another owner is refused
//! guard.release()?;
//! # Ok(()) }
//! ```

use std::future::Future;
use std::time::Duration;

use tokio::runtime::Runtime;

use crate::{LockError, Result};

mod guard;
mod locker;

pub use guard::LockGuard;
pub use locker::Locker;

/// How long a dropped guard's release may block the thread.
const DROP_RELEASE_WITHIN: Duration = Duration::from_secs(10);

/// Connects to the backend `url` names, as [`crate::connect`] does, on a runtime
/// of its own.
///
/// # Errors
///
/// As [`crate::connect`]; [`LockError::Config`] if the runtime cannot start or the
/// call comes from inside an async runtime.
pub fn connect(url: &str) -> Result<Locker> {
    outside_a_runtime()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("lockkit-blocking")
        .enable_all()
        .build()
        .map_err(|e| LockError::Config(format!("cannot start lockkit's runtime: {e}")))?;
    let locker = runtime.block_on(crate::connect(url))?;
    Ok(Locker::new(locker, OwnRuntime(Some(runtime))))
}

/// The runtime a blocking locker owns, shared by its clones and guards.
#[derive(Debug)]
struct OwnRuntime(Option<Runtime>);

impl OwnRuntime {
    /// Runs `f` to its end on the runtime, blocking this thread.
    fn block_on<T>(&self, f: impl Future<Output = Result<T>>) -> Result<T> {
        outside_a_runtime()?;
        match &self.0 {
            Some(runtime) => runtime.block_on(f),
            None => Err(LockError::Config(
                "lockkit's runtime is shut down".to_owned(),
            )),
        }
    }

    fn enter(&self) -> Option<tokio::runtime::EnterGuard<'_>> {
        self.0.as_ref().map(Runtime::enter)
    }
}

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            if outside_a_runtime().is_ok() {
                drop(runtime);
            } else {
                // Dropped inside some async runtime, where a blocking shutdown
                // would panic.
                runtime.shutdown_background();
            }
        }
    }
}

/// Refuses a call from inside an async runtime, where blocking would stall it.
fn outside_a_runtime() -> Result<()> {
    match tokio::runtime::Handle::try_current() {
        Ok(_) => Err(LockError::Config(
            "lockkit::blocking was called from inside an async runtime, where it would block \
             the runtime's thread: use lockkit::Locker there"
                .to_owned(),
        )),
        Err(_) => Ok(()),
    }
}
