//! The holds this driver has been granted, with the node behind each. A hold
//! knows its session; the session does not know its holds.

use std::sync::Arc;

use lockkit_core::holds::HoldTable;
use lockkit_core::{AcquireRequest, FencingToken, Grant, LockMode, LossSignal};
use tokio::time::Instant;

use crate::session::Session;

/// One granted hold.
#[derive(Debug, Clone)]
pub(crate) struct Hold {
    /// The full path of its queue node.
    pub(crate) path: String,
    pub(crate) token: FencingToken,
    pub(crate) mode: LockMode,
    pub(crate) session: Arc<Session>,
    /// Fired when the session drops (a child of the session's signal, see
    /// [`Session::hold_loss`]) or the node is deleted.
    pub(crate) loss: LossSignal,
}

impl Hold {
    /// The grant `req` gets for this hold (a first grant, or a re-entry).
    pub(crate) fn grant(&self, req: &AcquireRequest) -> Grant {
        // The node lives as long as the session; the deadline is the client-side
        // lease that the watchdog keeps pushing out while the session is connected
        // (invariant Z3). Should this process vanish, the node outlives it by the
        // session's expiry.
        Grant::of(req, self.token, Instant::now() + req.ttl)
            .with_loss_signal(self.loss.clone())
            .with_effective_ttl(self.session.outlives_its_client())
    }
}

/// Holds by `(key, owner)`.
pub(crate) type Holds = HoldTable<Hold>;

/// Signals the hold whose node is `path` lost, if it is still held.
pub(crate) fn fire_path(holds: &Holds, path: &str, why: &str) {
    if let Some(held) = holds.find(|h| h.path == path) {
        held.loss.fire(why);
    }
}
