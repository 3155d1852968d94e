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

use std::future::{Future, IntoFuture};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;

use crate::{FencingToken, Inspection, LockError, LockKey, LockMode, Result};

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
    Ok(Locker {
        locker,
        runtime: Arc::new(OwnRuntime(Some(runtime))),
        ttl: None,
    })
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

/// A blocking lock client: [`crate::Locker`]'s operations, each waiting on the
/// calling thread. Cheap to clone; clones share the connection and the runtime.
#[derive(Debug, Clone)]
pub struct Locker {
    locker: crate::Locker,
    runtime: Arc<OwnRuntime>,
    /// The watchdog lease of every hold taken, if not the default.
    ttl: Option<Duration>,
}

impl Locker {
    /// Takes every later hold with the watchdog lease `ttl` (renewed every
    /// `ttl / 3`) instead of [`crate::DEFAULT_WATCHDOG_TTL`].
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// `request` with this locker's lease, run to its end.
    fn take(&self, request: crate::LockRequest<'_>) -> Result<LockGuard> {
        let request = match self.ttl {
            Some(ttl) => request.ttl(ttl),
            None => request,
        };
        self.guard(self.run(request.into_future()))
    }

    /// Runs `f` on the runtime, from a thread outside any runtime.
    fn run<T>(&self, f: impl Future<Output = Result<T>>) -> Result<T> {
        self.runtime.block_on(f)
    }

    fn guard(&self, acquired: Result<crate::LockGuard>) -> Result<LockGuard> {
        acquired.map(|guard| LockGuard {
            guard: Some(guard),
            runtime: self.runtime.clone(),
        })
    }

    /// The async locker underneath (its futures must run on a runtime).
    pub fn as_async(&self) -> &crate::Locker {
        &self.locker
    }

    /// Takes the lock `key`, waiting as long as it takes; the watchdog renews it
    /// while the guard lives.
    ///
    /// # Errors
    ///
    /// As [`crate::Locker::lock`].
    pub fn lock(&self, key: impl Into<String>) -> Result<LockGuard> {
        self.take(self.locker.lock(key))
    }

    /// Takes the lock `key`, waiting at most `wait`.
    ///
    /// # Errors
    ///
    /// [`LockError::Timeout`] if it stayed held for `wait`; as [`lock`](Self::lock).
    pub fn lock_within(&self, key: impl Into<String>, wait: Duration) -> Result<LockGuard> {
        self.take(self.locker.lock(key).wait(wait))
    }

    /// Takes the lock `key` if it is free, without waiting.
    ///
    /// # Errors
    ///
    /// [`LockError::Contended`] if it is held.
    pub fn try_lock(&self, key: impl Into<String>) -> Result<LockGuard> {
        self.take(self.locker.lock(key).no_wait())
    }

    /// A read (shared) hold of `key`, waiting as long as it takes.
    ///
    /// # Errors
    ///
    /// As [`crate::Locker::read_lock`].
    pub fn read_lock(&self, key: impl Into<String>) -> Result<LockGuard> {
        self.take(self.locker.read_lock(key))
    }

    /// A write (exclusive) hold of `key`, waiting as long as it takes.
    ///
    /// # Errors
    ///
    /// As [`crate::Locker::write_lock`].
    pub fn write_lock(&self, key: impl Into<String>) -> Result<LockGuard> {
        self.take(self.locker.write_lock(key))
    }

    /// One permit of the semaphore `key` of `limit` permits, waiting at most
    /// `wait`.
    ///
    /// # Errors
    ///
    /// As [`crate::Semaphore::acquire`].
    pub fn permit(&self, key: impl Into<String>, limit: u32, wait: Duration) -> Result<LockGuard> {
        let semaphore = self.locker.semaphore(key, limit);
        self.take(semaphore.acquire().wait(wait))
    }

    /// Who holds `key` and who waits.
    ///
    /// # Errors
    ///
    /// As [`crate::Locker::inspect`].
    pub fn inspect(&self, key: impl Into<String>) -> Result<Inspection> {
        self.run(self.locker.inspect(key))
    }
}

/// A held lock of the blocking API: released when dropped.
#[must_use = "if unused the lock is released immediately"]
#[derive(Debug)]
pub struct LockGuard {
    guard: Option<crate::LockGuard>,
    runtime: Arc<OwnRuntime>,
}

impl LockGuard {
    fn inner(&self) -> &crate::LockGuard {
        #[allow(clippy::expect_used)]
        // BUG: `guard` is only taken by `release` and `drop`, which consume it.
        self.guard.as_ref().expect("BUG: guard used after release")
    }

    /// The lock's key.
    pub fn key(&self) -> &LockKey {
        self.inner().key()
    }

    /// The fencing token: send it with every write to the protected resource.
    pub fn token(&self) -> FencingToken {
        self.inner().token()
    }

    /// What the hold excludes.
    pub fn mode(&self) -> LockMode {
        self.inner().mode()
    }

    /// Whether the hold is known to be lost; stop writing when it is.
    pub fn is_lost(&self) -> bool {
        self.inner().is_lost()
    }

    /// When the lease ends unless renewed, on the monotonic clock.
    pub fn deadline(&self) -> Instant {
        self.inner().deadline().into_std()
    }

    /// Pushes the lease out to `ttl` from now.
    ///
    /// # Errors
    ///
    /// As [`crate::LockGuard::extend`].
    pub fn extend(&self, ttl: Duration) -> Result<()> {
        self.runtime.block_on(self.inner().extend(ttl))
    }

    /// Releases the lock and says whether the backend still had it.
    ///
    /// # Errors
    ///
    /// As [`crate::LockGuard::release`].
    pub fn release(mut self) -> Result<()> {
        let Some(guard) = self.guard.take() else {
            return Ok(());
        };
        if let Err(e) = outside_a_runtime() {
            drop(guard); // released in the background, on its runtime
            return Err(e);
        }
        self.runtime.block_on(guard.release())
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let Some(guard) = self.guard.take() else {
            return;
        };
        if outside_a_runtime().is_err() {
            // Dropped inside a runtime: release in the background, on ours.
            let _entered = self.runtime.enter();
            drop(guard);
            return;
        }
        let released = self.runtime.block_on(async {
            tokio::time::timeout(DROP_RELEASE_WITHIN, guard.release())
                .await
                .unwrap_or(Ok(()))
        });
        if let Err(error) = released {
            tracing::warn!(%error, "release on drop failed");
        }
    }
}
