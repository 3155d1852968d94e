//! The holds this driver has been granted, with the node behind each.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use lockkit_core::{FencingToken, LockKey, LockMode, LossSignal, OwnerId};

use crate::session::Session;

/// One granted hold.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    /// The full path of its queue node.
    pub(crate) path: String,
    pub(crate) token: FencingToken,
    pub(crate) mode: LockMode,
    pub(crate) session: Arc<Session>,
    /// Fired when the session drops or the node is deleted.
    pub(crate) loss: LossSignal,
}

/// Holds by `(key, owner)`.
#[derive(Debug, Default)]
pub(crate) struct Holds {
    map: Mutex<HashMap<(LockKey, OwnerId), Held>>,
}

impl Holds {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<(LockKey, OwnerId), Held>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
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

    /// Signals every hold of `session` lost.
    pub(crate) fn fire_session(&self, session: i64, why: &str) {
        for held in self.map().values().filter(|h| h.session.id == session) {
            held.loss.fire(why);
        }
    }

    /// Signals the hold whose node is `path` lost, if it is still held.
    pub(crate) fn fire_path(&self, path: &str, why: &str) {
        if let Some(held) = self.map().values().find(|h| h.path == path) {
            held.loss.fire(why);
        }
    }
}
