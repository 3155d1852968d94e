//! [`Semaphore`]: a counting semaphore on one key.

use super::guard::LockGuard;
use super::locker::Locker;
use super::request::LockRequest;
use crate::driver::{Inspection, LockMode};
use crate::error::Result;

/// A counting semaphore: at most [`limit`](Semaphore::limit) permits of
/// [`key`](Semaphore::key) are held at once, across every process using it. Made
/// by [`Locker::semaphore`]; cheap to clone.
///
/// Each permit is a hold like a lock's: leased, renewed by the watchdog, released
/// by its guard, signalling [`LockGuard::lost`], with its own fencing token —
/// strictly greater than every token handed out before on this key, whichever
/// permit it was. Each [`acquire`](Semaphore::acquire) is a new permit unless it
/// names the [`crate::OwnerId`] of one already held, which it re-enters.
///
/// Every user of the key must give the same limit: an acquire whose limit differs
/// from the one the holders use fails with [`crate::LockError::Config`].
///
/// # Examples
///
/// ```
/// use std::{sync::Arc, time::Duration};
/// use lockkit::{Locker, mem::MemDriver};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), lockkit::LockError> {
/// let locker = Locker::new(Arc::new(MemDriver::new()));
/// let exports = locker.semaphore("exports", 3);
/// let permit = exports.acquire().ttl(Duration::from_secs(10)).wait(Duration::from_secs(5)).await?;
/// assert_eq!(exports.available().await?, 2);
/// permit.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Semaphore {
    locker: Locker,
    key: String,
    limit: u32,
}

impl Semaphore {
    pub(super) fn new(locker: Locker, key: String, limit: u32) -> Self {
        Self { locker, key, limit }
    }

    /// The semaphore's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// How many permits it has.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Starts building a request for one permit; `.await` it to acquire. Waits as
    /// long as it takes unless told otherwise ([`LockRequest::wait`],
    /// [`LockRequest::no_wait`]).
    pub fn acquire(&self) -> LockRequest<'_> {
        LockRequest::new(
            &self.locker,
            self.key.clone(),
            LockMode::Permit { limit: self.limit },
        )
    }

    /// Takes a permit if one is free right now.
    ///
    /// # Errors
    ///
    /// [`crate::LockError::Contended`] when all are out, [`crate::LockError::Config`]
    /// for a limit that differs from the holders', or as [`Locker::lock`].
    pub async fn try_acquire(&self) -> Result<LockGuard> {
        self.acquire().no_wait().await
    }

    /// The permits held and the waiters, as [`Locker::inspect`] reports them.
    ///
    /// # Errors
    ///
    /// As [`Locker::inspect`].
    pub async fn inspect(&self) -> Result<Inspection> {
        self.locker.inspect(self.key.as_str()).await
    }

    /// How many permits are free right now (by [`inspect`](Semaphore::inspect); a
    /// moment later it may differ).
    ///
    /// # Errors
    ///
    /// As [`Locker::inspect`].
    pub async fn available(&self) -> Result<u32> {
        let held = self.inspect().await?.holders.len();
        Ok(self
            .limit
            .saturating_sub(u32::try_from(held).unwrap_or(u32::MAX)))
    }
}
