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

    /// Fires the signal with `reason` (ignored if it already fired).
    pub fn fire(&self, reason: impl Into<String>) {
        let _ = self.inner.reason.set(reason.into());
        self.inner.token.cancel();
    }

    /// Why it fired, if it has.
    pub fn reason(&self) -> Option<String> {
        self.inner.reason.get().cloned()
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
