//! A blocking API over [`crate::Locker`], for programs without an async runtime
//! (the `blocking` feature), as `reqwest::blocking` is for reqwest.
//!
//! A [`Locker`] owns a small Tokio runtime (one worker thread) that carries the
//! connection, the watchdog's renewals and the lost signals while the calling
//! thread works. Every call blocks the calling thread until it is done. A
//! [`LockGuard`] releases its lock when it is dropped, and the drop returns once
//! the backend has answered (or after 10 s, when the lease covers the rest); a
//! [`Leadership`] resigns the same way.
//!
//! # The API, next to the async one
//!
//! Each async call that returns a request to `.await` has a blocking twin that
//! takes the hold with the request's default (waiting as long as it takes), one
//! with a bounded wait, and one that returns the request to build:
//!
//! | async ([`crate::Locker`]) | blocking ([`Locker`]) |
//! |---|---|
//! | `lock(k).await`, `.wait(d)`, `try_lock(k)` | [`lock`](Locker::lock), [`lock_within`](Locker::lock_within), [`try_lock`](Locker::try_lock) |
//! | `read_lock(k).await`, `.wait(d)` | [`read_lock`](Locker::read_lock), [`read_lock_within`](Locker::read_lock_within) |
//! | `write_lock(k).await`, `.wait(d)` | [`write_lock`](Locker::write_lock), [`write_lock_within`](Locker::write_lock_within) |
//! | any request: `.ttl`, `.lease`, `.wait`, `.no_wait`, `.owner` | [`lock_request`](Locker::lock_request), [`read_lock_request`](Locker::read_lock_request), [`write_lock_request`](Locker::write_lock_request), [`Semaphore::acquire_request`], then [`LockRequest::acquire`] |
//! | `semaphore(k, n)`: `acquire`, `try_acquire`, `available` | [`semaphore`](Locker::semaphore): [`Semaphore`]; shorthands [`permit`](Locker::permit), [`try_permit`](Locker::try_permit) |
//! | `election(name)`: `campaign`, `leader`, `observe` | [`election`](Locker::election): [`Election`], [`Leadership`], [`Observer`], with [`campaign_within`](Election::campaign_within) and [`changed_within`](Observer::changed_within) |
//! | `job(name).run(…)` | [`job`](Locker::job): [`Job::run`], the job running on the calling thread |
//! | `guard.lost()` (a future) | [`LockGuard::wait_lost`] (blocks until lost, or the timeout) and [`LockGuard::lost`] (a [`std::sync::mpsc::Receiver`]) |
//!
//! A bounded wait that runs out fails with [`LockError::Timeout`]; a `try_` call
//! that finds the hold taken, with [`LockError::Contended`].
//!
//! The blocking API is for threads that are not running async code: called from
//! inside an async runtime, every call that waits refuses with
//! [`LockError::Config`] instead of blocking that runtime's thread.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! # fn main() -> Result<(), lockkit::LockError> {
//! # let dir = tempfile::tempdir().map_err(|e| lockkit::LockError::Config(e.to_string()))?;
//! # let url = format!("sqlite://{}", dir.path().join("locks.db").display());
//! let locker = lockkit::blocking::connect(&url)?; // e.g. "sqlite://locks.db"
//! let guard = locker.lock("report:daily")?;
//! println!("writing the report with fencing token {}", guard.token());
//! assert!(locker.try_lock("report:daily").is_err()); // another owner is refused
//! // Nothing took the hold away within 10 ms:
//! assert!(guard.wait_lost(Duration::from_millis(10))?.is_none());
//! guard.release()?;
//!
//! let reading = locker.read_lock_within("catalog", Duration::from_secs(5))?;
//! let writing = locker.write_lock_request("catalog").no_wait().acquire();
//! assert!(matches!(writing, Err(lockkit::LockError::Contended { .. })));
//! drop(reading); // released before `drop` returns
//!
//! let permit = locker.try_permit("exports", 2)?;
//! assert_eq!(locker.semaphore("exports", 2).available()?, 1);
//! # drop(permit);
//! # Ok(()) }
//! ```

use std::future::Future;
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio::task::JoinHandle;

use crate::{LockError, Result};

mod election;
mod guard;
mod job;
mod leadership;
mod locker;
mod request;

pub use election::{Election, Observer};
pub use guard::LockGuard;
pub use job::Job;
pub use leadership::Leadership;
pub use locker::Locker;
pub use request::{LockRequest, Semaphore};

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
    fn block_on<F: Future>(&self, f: F) -> Result<F::Output> {
        outside_a_runtime()?;
        match &self.0 {
            Some(runtime) => Ok(runtime.block_on(f)),
            None => Err(shut_down()),
        }
    }

    /// Runs the fallible `f` to its end, blocking this thread.
    fn call<T>(&self, f: impl Future<Output = Result<T>>) -> Result<T> {
        self.block_on(f)?
    }

    /// Runs `f` for at most `wait`: `None` if it had not ended by then.
    fn block_on_within<F: Future>(&self, wait: Duration, f: F) -> Result<Option<F::Output>> {
        self.block_on(async { tokio::time::timeout(wait, f).await.ok() })
    }

    /// Runs `f` in the background, on the runtime.
    fn spawn<F>(&self, f: F) -> Result<JoinHandle<F::Output>>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match &self.0 {
            Some(runtime) => Ok(runtime.spawn(f)),
            None => Err(shut_down()),
        }
    }

    /// Releases `guard`: waits for the backend's answer on a plain thread; inside
    /// an async runtime, refuses and leaves the release to the background.
    fn release(&self, guard: crate::LockGuard) -> Result<()> {
        if let Err(e) = outside_a_runtime() {
            let _entered = self.enter();
            drop(guard); // released in the background, on our runtime
            return Err(e);
        }
        self.call(guard.release())
    }

    /// Releases `guard` from a `drop`: waits for the backend's answer at most
    /// [`DROP_RELEASE_WITHIN`] on a plain thread, in the background inside a
    /// runtime; a failure is logged.
    fn release_on_drop(&self, guard: crate::LockGuard) {
        if outside_a_runtime().is_err() {
            let _entered = self.enter();
            drop(guard);
            return;
        }
        let released = self.call(async {
            tokio::time::timeout(DROP_RELEASE_WITHIN, guard.release())
                .await
                .unwrap_or(Ok(()))
        });
        if let Err(error) = released {
            tracing::warn!(%error, "release on drop failed");
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

fn shut_down() -> LockError {
    LockError::Config("lockkit's runtime is shut down".to_owned())
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
