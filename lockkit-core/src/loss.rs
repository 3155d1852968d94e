//! [`LossSignal`]: how a driver tells the client, unprompted, that holds are gone.

use std::fmt;
use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;

/// Fired by a driver when the holds it is attached to can no longer be trusted:
/// the backend session disconnected or expired, or the hold's node was deleted.
///
/// Drivers whose holds are bound to a session (ZooKeeper) attach one to each
/// [`crate::Grant`] with [`crate::Grant::with_loss_signal`]; the client then makes
/// [`crate::LockGuard::lost`] fire as soon as the signal does, without waiting for
/// the watchdog's next renewal. Clones share the signal; firing is once-only and
/// the first reason wins.
///
/// # Examples
///
/// ```
/// use lockkit::driver::LossSignal;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let session = LossSignal::new();
/// let seen_by_a_guard = session.clone();
/// session.fire("ZooKeeper session disconnected");
/// assert_eq!(seen_by_a_guard.fired().await, "ZooKeeper session disconnected");
/// # }
/// ```
#[derive(Clone, Default)]
pub struct LossSignal {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    token: CancellationToken,
    reason: OnceLock<String>,
    /// The signal this one derives from ([`LossSignal::child`]).
    parent: Option<LossSignal>,
}

impl fmt::Debug for LossSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LossSignal")
            .field("reason", &self.reason())
            .finish()
    }
}

impl LossSignal {
    /// A signal that has not fired.
    pub fn new() -> Self {
        Self::default()
    }

    /// A signal that fires when this one does (with its reason), or on its own
    /// without touching this one: how a session's loss reaches each of its holds,
    /// while one hold can still be lost alone (its node deleted).
    ///
    /// A session keeps one signal and gives every hold a child, so it never needs
    /// to know its holds (tokio-util's `CancellationToken::child_token`, which this
    /// is built on, is the model).
    ///
    /// # Examples
    ///
    /// ```
    /// use lockkit::driver::LossSignal;
    ///
    /// let session = LossSignal::new();
    /// let (a, b) = (session.child(), session.child());
    /// a.fire("node deleted");
    /// assert!(!session.is_fired() && !b.is_fired());
    /// session.fire("session expired");
    /// assert_eq!(b.reason().as_deref(), Some("session expired"));
    /// assert_eq!(a.reason().as_deref(), Some("node deleted"));
    /// ```
    pub fn child(&self) -> LossSignal {
        LossSignal {
            inner: Arc::new(Inner {
                token: self.inner.token.child_token(),
                reason: OnceLock::new(),
                parent: Some(self.clone()),
            }),
        }
    }

    /// Fires the signal with `reason` (ignored if it already fired, by itself or
    /// through its parent).
    pub fn fire(&self, reason: impl Into<String>) {
        if self.inner.token.is_cancelled() {
            return;
        }
        let _ = self.inner.reason.set(reason.into());
        self.inner.token.cancel();
    }

    /// Why it fired, if it has: its own reason, else its parent's.
    pub fn reason(&self) -> Option<String> {
        if !self.is_fired() {
            return None;
        }
        self.inner
            .reason
            .get()
            .cloned()
            .or_else(|| self.inner.parent.as_ref().and_then(LossSignal::reason))
    }

    /// Whether it has fired.
    pub fn is_fired(&self) -> bool {
        self.inner.token.is_cancelled()
    }

    /// Resolves with the reason once the signal fires.
    pub async fn fired(&self) -> String {
        self.inner.token.cancelled().await;
        self.reason().unwrap_or_default()
    }
}
