//! [`Leadership`]: proof that a candidate leads, resigned when dropped.

use std::sync::{Arc, mpsc};
use std::time::Duration;

use super::OwnRuntime;
use super::guard::LostWatch;
use crate::{FencingToken, LostReason, Result};

/// This candidate leads: returned by [`super::Election::campaign`], as
/// [`crate::Leadership`].
///
/// The watchdog renews it on the locker's runtime while the thread works.
/// Dropping it resigns, and the drop returns once the backend has answered (or
/// after 10 s, when the lease covers the rest). Hand [`term`](Self::term) to
/// whatever the leader writes to, as a fencing token.
#[must_use = "if unused the leadership is resigned immediately"]
#[derive(Debug)]
pub struct Leadership {
    leadership: Option<crate::Leadership>,
    runtime: Arc<OwnRuntime>,
    watch: LostWatch,
}

impl Leadership {
    pub(super) fn new(leadership: crate::Leadership, runtime: Arc<OwnRuntime>) -> Self {
        Self {
            leadership: Some(leadership),
            runtime,
            watch: LostWatch::new(),
        }
    }

    fn inner(&self) -> &crate::Leadership {
        #[allow(clippy::expect_used)]
        // BUG: `leadership` is only taken by `resign` and `drop`, which consume it.
        self.leadership
            .as_ref()
            .expect("BUG: leadership used after resigning")
    }

    /// This term's number: the hold's fencing token, greater than every term
    /// before it.
    pub fn term(&self) -> FencingToken {
        self.inner().term()
    }

    /// The value this leader last stored.
    pub fn value(&self) -> String {
        self.inner().value()
    }

    /// Whether leadership is known to be lost (or its deadline has passed).
    pub fn is_lost(&self) -> bool {
        self.inner().is_lost()
    }

    /// Blocks until leadership is lost or `timeout` passes: the reason, or `None`
    /// if this candidate still led when the time ran out. As
    /// [`super::LockGuard::wait_lost`].
    ///
    /// # Errors
    ///
    /// [`crate::LockError::Config`] from inside an async runtime.
    pub fn wait_lost(&self, timeout: Duration) -> Result<Option<LostReason>> {
        self.runtime.block_on_within(timeout, self.inner().lost())
    }

    /// The lost signal as a channel: the reason once, when leadership is lost;
    /// disconnected once it is resigned or dropped without a loss. As
    /// [`super::LockGuard::lost`].
    pub fn lost(&self) -> mpsc::Receiver<LostReason> {
        self.watch.receiver(&self.runtime, self.inner().lost())
    }

    /// Stores `value` as the leader's value, keeping the term and the lease.
    ///
    /// # Errors
    ///
    /// As [`crate::Leadership::proclaim`].
    pub fn proclaim(&self, value: impl Into<String>) -> Result<()> {
        self.runtime.call(self.inner().proclaim(value))
    }

    /// Gives up leadership: the next candidate may lead at once.
    ///
    /// # Errors
    ///
    /// As [`crate::Leadership::resign`]; [`crate::LockError::Config`] from inside
    /// an async runtime, the resignation then going on in the background.
    pub fn resign(mut self) -> Result<()> {
        match self.leadership.take() {
            Some(leadership) => self.runtime.release(leadership.into_guard()),
            None => Ok(()),
        }
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        if let Some(leadership) = self.leadership.take() {
            self.runtime.release_on_drop(leadership.into_guard());
        }
    }
}
