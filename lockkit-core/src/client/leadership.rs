//! [`Leadership`]: proof that a candidate leads an election.

use std::future::Future;
use std::sync::Mutex;

use super::guard::LockGuard;
use super::hold::LostReason;
use crate::driver::{holder_text, validate_value};
use crate::error::{LockError, Result};
use crate::sync::lock;
use crate::types::FencingToken;

/// This candidate leads: returned by [`crate::Election::campaign`].
///
/// It is the election lock's guard: the watchdog renews it, [`lost`](Self::lost)
/// fires when the lease cannot be trusted any more, and dropping it resigns in the
/// background. Hand [`term`](Self::term) to whatever the leader writes to, as a
/// fencing token.
#[must_use = "if unused the leadership is resigned immediately"]
#[derive(Debug)]
pub struct Leadership {
    guard: LockGuard,
    value: Mutex<String>,
}

impl Leadership {
    pub(super) fn new(guard: LockGuard, value: String) -> Self {
        Self {
            guard,
            value: Mutex::new(value),
        }
    }

    /// This term's number: the hold's fencing token, greater than every term
    /// before it.
    pub fn term(&self) -> FencingToken {
        self.guard.token()
    }

    /// The value this leader last stored.
    pub fn value(&self) -> String {
        lock(&self.value).clone()
    }

    /// The election lock's guard.
    pub fn guard(&self) -> &LockGuard {
        &self.guard
    }

    /// The election lock's guard, to hold (and release) as a lock: leadership
    /// goes with it.
    pub fn into_guard(self) -> LockGuard {
        self.guard
    }

    /// Whether leadership is known to be lost (or its deadline has passed).
    pub fn is_lost(&self) -> bool {
        self.guard.is_lost()
    }

    /// Resolves when this candidate can no longer trust that it leads; stop acting
    /// as leader when it fires. Independent of `self`, as [`LockGuard::lost`].
    pub fn lost(&self) -> impl Future<Output = LostReason> + Send + 'static {
        self.guard.lost()
    }

    /// Stores `value` as the leader's value, keeping the term and the lease.
    ///
    /// # Errors
    ///
    /// [`LockError::Lost`] if leadership is gone, [`LockError::Config`] for a bad
    /// value (as in `campaign`), [`LockError::Unsupported`] on a driver without
    /// [`crate::Capabilities::proclaim`], or a backend error (the old value or the
    /// new one is stored).
    pub async fn proclaim(&self, value: impl Into<String>) -> Result<()> {
        let value = value.into();
        validate_value(&value)?;
        let owner = self.guard.owner();
        let text = holder_text(owner.label(), Some(&value)).ok_or_else(|| {
            LockError::Config("BUG: a holder text with a value is never empty".to_owned())
        })?;
        self.guard.proclaim(&text).await?;
        *lock(&self.value) = value;
        Ok(())
    }

    /// Gives up leadership: the next candidate may lead at once.
    ///
    /// # Errors
    ///
    /// As [`LockGuard::release`]: [`LockError::Lost`] if the hold was already gone.
    pub async fn resign(self) -> Result<()> {
        self.guard.release().await
    }
}
