//! The holds this driver has been granted, and which owner of this driver is
//! taking which key right now.
//!
//! Consul knows sessions, not owners: a key acquired by our session would be
//! acquired again, successfully, for any other owner sharing this driver. So an
//! owner *claims* a key here before asking Consul, and another owner of the same
//! driver finds it claimed and waits, as for a lock held elsewhere (invariant
//! C1). (Permits need no claim: each contends with a session of its own, see
//! `permit_sessions.rs`.)

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use lockkit_core::holds::HoldTable;
use lockkit_core::sync::lock;
use lockkit_core::{AcquireRequest, FencingToken, Grant, LockKey, LockMode, LossSignal, OwnerId};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::session::Session;

/// One granted hold.
#[derive(Debug, Clone)]
pub(crate) struct Hold {
    /// Exclusive, or a permit.
    pub(crate) mode: LockMode,
    /// The KV key the session holds: the lock key, or a permit's contender key.
    pub(crate) kv_key: String,
    /// The ModifyIndex of the acquiring write (for a permit, of the transaction
    /// that gave it a slot): the fencing token (invariant C2).
    pub(crate) token: FencingToken,
    pub(crate) session: Arc<Session>,
    /// Fired when the session is invalidated (a child of the session's signal,
    /// see [`Session::hold_loss`]) or the key is found gone.
    pub(crate) loss: LossSignal,
}

impl Hold {
    /// The grant `req` gets for this hold (a first grant, or a re-entry).
    pub(crate) fn grant(&self, req: &AcquireRequest) -> Grant {
        // The key lives as long as the session; the deadline is the client-side
        // lease the watchdog pushes out while the session is renewed and the key
        // is ours. Should this process vanish, the key outlives it by the
        // session's invalidation and the lock-delay.
        Grant::of(req, self.token, Instant::now() + req.ttl)
            .with_loss_signal(self.loss.clone())
            .with_effective_ttl(self.session.outlives_its_client)
    }
}

/// Holds by `(key, owner)`, and claims by key.
///
/// Lock order: a change that reads or writes both takes the claims first, then
/// the table's own lock (inside [`HoldTable`]), so that a claim is never dropped
/// while its owner's hold is being recorded.
#[derive(Debug, Default)]
pub(crate) struct Holds {
    held: HoldTable<Hold>,
    /// Which owner of this driver has the key (taking or holding it).
    claims: Mutex<HashMap<LockKey, OwnerId>>,
    /// Notified whenever a claim is dropped.
    pub(crate) unclaimed: Arc<Notify>,
}

impl Holds {
    fn claims(&self) -> std::sync::MutexGuard<'_, HashMap<LockKey, OwnerId>> {
        lock(&self.claims)
    }

    /// Claims `key` for `owner`; false if another owner of this driver has it.
    pub(crate) fn claim(&self, key: &LockKey, owner: &OwnerId) -> bool {
        let mut claims = self.claims();
        match claims.get(key) {
            Some(o) => o == owner,
            None => {
                claims.insert(key.clone(), owner.clone());
                true
            }
        }
    }

    /// Drops `owner`'s claim on `key` unless it holds the key.
    pub(crate) fn unclaim(&self, key: &LockKey, owner: &OwnerId) {
        let mut claims = self.claims();
        if claims.get(key) == Some(owner) && self.held.get(key, owner).is_none() {
            claims.remove(key);
            drop(claims);
            self.unclaimed.notify_waiters();
        }
    }

    pub(crate) fn insert(&self, key: LockKey, owner: OwnerId, hold: Hold) {
        let _claims = self.claims();
        self.held.insert(key, owner, hold);
    }

    pub(crate) fn get(&self, key: &LockKey, owner: &OwnerId) -> Option<Hold> {
        self.held.get(key, owner)
    }

    /// Forgets the hold but keeps the claim: for a release, which drops the claim
    /// with [`unclaim`](Self::unclaim) once the key is deleted (before that, another
    /// owner of this driver would re-acquire the key our session still holds).
    pub(crate) fn take(&self, key: &LockKey, owner: &OwnerId) -> Option<Hold> {
        self.held.remove(key, owner)
    }

    /// Forgets the hold and its claim.
    pub(crate) fn remove(&self, key: &LockKey, owner: &OwnerId) -> Option<Hold> {
        let mut claims = self.claims();
        let hold = self.held.remove(key, owner);
        if claims.get(key) == Some(owner) {
            claims.remove(key);
        }
        drop(claims);
        self.unclaimed.notify_waiters();
        hold
    }
}
