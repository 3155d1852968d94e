//! The holds this driver has been granted, with the node behind each. A hold
//! knows its session; the session does not know its holds.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use lockkit_core::sync::lock;
use lockkit_core::{AcquireRequest, FencingToken, Grant, LockKey, LockMode, LossSignal, OwnerId};
use tokio::time::Instant;

use crate::session::Session;

/// One granted hold.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    /// The full path of its queue node.
    pub(crate) path: String,
    pub(crate) token: FencingToken,
    pub(crate) mode: LockMode,
    pub(crate) session: Arc<Session>,
    /// Fired when the session drops (a child of the session's signal, see
    /// [`Session::hold_loss`]) or the node is deleted.
    pub(crate) loss: LossSignal,
}

impl Held {
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
#[derive(Debug, Default)]
pub(crate) struct Holds {
    map: Mutex<HashMap<(LockKey, OwnerId), Held>>,
}

impl Holds {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<(LockKey, OwnerId), Held>> {
        lock(&self.map)
    }

    pub(crate) fn insert(&self, key: LockKey, owner: OwnerId, held: Held) {
        self.map().insert((key, owner), held);
    }

    pub(crate) fn get(&self, key: &LockKey, owner: &OwnerId) -> Option<Held> {
        self.map().get(&(key.clone(), owner.clone())).cloned()
    }

    pub(crate) fn remove(&self, key: &LockKey, owner: &OwnerId) -> Option<Held> {
        self.map().remove(&(key.clone(), owner.clone()))
    }

    /// Signals the hold whose node is `path` lost, if it is still held.
    pub(crate) fn fire_path(&self, path: &str, why: &str) {
        if let Some(held) = self.map().values().find(|h| h.path == path) {
            held.loss.fire(why);
        }
    }
}
