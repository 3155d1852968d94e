//! The primitives `bench` measures beside the lock (`--modes read,semaphore`):
//! acquire+release of a read lock and of a semaphore's permit, timed in the same
//! rounds as the lock and the floor, and a semaphore's queue of waiters.

use lockkit::{Capabilities, LockError, LockGuard, Locker};
use serde::Serialize;

use super::measure::Latency;
use super::queue::Queue;

/// A primitive other than the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Mode {
    /// A read (shared) lock.
    Read,
    /// One permit of a semaphore of `--limit` permits.
    Semaphore,
}

impl Mode {
    /// The key this mode locks (never the lock's: a key is one primitive).
    pub(crate) fn key(self, prefix: &str) -> String {
        match self {
            Mode::Read => crate::scratch::key(&format!("{prefix}-read")),
            Mode::Semaphore => crate::scratch::key(&format!("{prefix}-semaphore")),
        }
    }

    /// How the report names it.
    pub(crate) fn label(self, limit: u32) -> String {
        match self {
            Mode::Read => "read lock".to_owned(),
            Mode::Semaphore => format!("semaphore of {limit}"),
        }
    }

    /// Whether a driver with `caps` has it.
    pub(crate) fn supported(self, caps: &Capabilities) -> bool {
        match self {
            Mode::Read => caps.shared,
            Mode::Semaphore => caps.permits,
        }
    }

    /// Takes it without waiting.
    pub(crate) async fn try_take(
        self,
        locker: &Locker,
        key: &str,
        limit: u32,
    ) -> Result<LockGuard, LockError> {
        match self {
            Mode::Read => locker.read_lock(key).no_wait().await,
            Mode::Semaphore => locker.semaphore(key, limit).try_acquire().await,
        }
    }

    /// Takes it, waiting up to `wait`.
    pub(crate) async fn take(
        self,
        locker: &Locker,
        key: &str,
        limit: u32,
        wait: std::time::Duration,
    ) -> Result<LockGuard, LockError> {
        match self {
            Mode::Read => locker.read_lock(key).wait(wait).await,
            Mode::Semaphore => locker.semaphore(key, limit).acquire().wait(wait).await,
        }
    }
}

/// What `bench` measured for one primitive beside the lock.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ModeReport {
    pub(crate) mode: Mode,
    /// For a semaphore, its number of permits.
    pub(crate) limit: Option<u32>,
    /// Uncontended acquire+release, in the same rounds as the lock and the floor.
    pub(crate) lockkit: Latency,
    /// Against the floor's raw lock commands (there is no raw floor of its own).
    pub(crate) p50_ratio_lockkit_over_floor: Option<f64>,
    /// A semaphore's queue: `--limit` holders, then `--waiters` waiters.
    pub(crate) queue: Option<Queue>,
}
