//! What one attempt answers, and the driver's side of a wait: [`Contender`].

use std::future::Future;
use std::pin::Pin;

use async_trait::async_trait;
use tokio::time::Instant;

use crate::driver::Grant;
use crate::error::{LockError, Result};

/// Resolves when the backend says the lock may be free: a release notification, a
/// watch event, a blocking query's answer. It owns what it needs (it outlives the
/// attempt that made it). A retryable error ([`LockError::is_retryable`]: a watch
/// or a connection that broke) counts as a transient failure; any other ends the
/// acquire.
pub type Wake = Pin<Box<dyn Future<Output = Result<()>> + Send>>;

/// What one attempt answers.
#[derive(Debug)]
#[non_exhaustive]
pub enum Attempt {
    /// The hold is ours.
    Granted(Grant),
    /// Someone else holds it: wait as [`Busy`] says, then attempt again.
    Busy(Busy),
    /// A failure that may pass (a connection dropped, an election, a slot
    /// migrating): attempted again within the policy's
    /// [`Patience`](super::Patience), after which this error ends the acquire.
    Transient(LockError),
}

impl Attempt {
    /// An attempt that failed with `e`: [`Attempt::Transient`] if it is a
    /// [`LockError::Connection`] (the server could not be reached, or did not
    /// answer in time: the wait goes on), else the acquire's error. For drivers
    /// whose attempt may simply be sent again.
    ///
    /// # Errors
    ///
    /// `e`, when it is not a connection error.
    pub fn failed(e: LockError) -> Result<Attempt> {
        match e {
            LockError::Connection { .. } => Ok(Attempt::Transient(e)),
            e => Err(e),
        }
    }
}

/// What to wait for before the next attempt: a wake-up, a time to try again
/// anyway, or both; with neither, the policy's fallback poll decides.
#[non_exhaustive]
pub struct Busy {
    /// The backend's wake-up, if it has one for this lock.
    pub wake: Option<Wake>,
    /// When to attempt again at the latest (a lost notification, the holder's
    /// expiry); `None`: the policy's next poll pause.
    pub retry_at: Option<Instant>,
}

impl std::fmt::Debug for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Busy")
            .field("wake", &self.wake.is_some())
            .field("retry_at", &self.retry_at)
            .finish()
    }
}

impl Busy {
    /// No wake-up: attempt again after the policy's next poll pause.
    pub fn poll() -> Self {
        Self {
            wake: None,
            retry_at: None,
        }
    }

    /// Attempt again at `at` (now, for "at once").
    pub fn until(at: Instant) -> Self {
        Self {
            wake: None,
            retry_at: Some(at),
        }
    }

    /// Attempt again when `wake` resolves (or after the policy's next poll pause,
    /// unless [`retry_at`](Self::retry_at) says otherwise).
    pub fn woken_by(wake: impl Future<Output = Result<()>> + Send + 'static) -> Self {
        Self {
            wake: Some(Box::pin(wake)),
            retry_at: None,
        }
    }

    /// Attempt again only when `wake` resolves (or the wait ends): for a backend
    /// whose wake-up cannot be lost, such as a watch that the client re-establishes.
    pub fn trusting(wake: impl Future<Output = Result<()>> + Send + 'static) -> Self {
        const YEAR: std::time::Duration = std::time::Duration::from_secs(365 * 24 * 3600);
        Self::woken_by(wake).or_at(Instant::now() + YEAR)
    }

    /// With a wake-up.
    pub fn with_wake(mut self, wake: Wake) -> Self {
        self.wake = Some(wake);
        self
    }

    /// And attempt again at `at` at the latest.
    pub fn or_at(mut self, at: Instant) -> Self {
        self.retry_at = Some(at);
        self
    }
}

/// A driver's side of one acquire: the engine ([`crate::driver::acquire`]) makes its
/// attempts.
#[async_trait]
pub trait Contender: Send {
    /// Tries once: grants, or says the lock is busy and what to wait for, or
    /// reports a transient failure. An `Err` ends the acquire at once (after
    /// [`give_up`](Self::give_up)).
    ///
    /// # Errors
    ///
    /// A failure that will not pass by retrying.
    async fn attempt(&mut self) -> Result<Attempt>;

    /// The wait ends without a grant — refused ([`LockError::Contended`]), out of
    /// time, cancelled, or failed with `why` — : undo what the attempts left behind
    /// (a queue entry, a waiters-set entry). Nothing by default.
    async fn give_up(&mut self, why: &LockError) {
        let _ = why;
    }
}
