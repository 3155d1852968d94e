//! Which session each permit of this driver contends with.
//!
//! Consul's semaphore recipe counts sessions: the record lists each holder's
//! session once, and each session has one contender key per semaphore. Owners of
//! one driver share its session, so the first of them to want a permit of a given
//! semaphore uses the driver's session, and each other one at the same time gets a
//! spare session of its own (created on demand, renewed like the main one,
//! destroyed once no permit uses it).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

use lockkit_core::LockKey;
use lockkit_core::sync::lock;

use crate::session::Session;

#[derive(Debug, Default)]
struct Inner {
    /// Spare sessions, live or not yet known to be gone.
    spares: Vec<Arc<Session>>,
    /// Which session contends for (or holds) a permit of which semaphore.
    in_use: HashSet<(LockKey, String)>,
}

/// Sessions in use per semaphore, and the spare sessions.
#[derive(Debug, Default)]
pub(crate) struct PermitSessions {
    inner: Mutex<Inner>,
}

impl PermitSessions {
    fn inner(&self) -> MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    /// Takes `session` for a permit of `key`, unless it is in use there already.
    pub(crate) fn take(&self, key: &LockKey, session: &Session) -> bool {
        self.inner()
            .in_use
            .insert((key.clone(), session.id.clone()))
    }

    /// Takes a live spare session not in use on `key`, if there is one.
    pub(crate) fn take_spare(&self, key: &LockKey) -> Option<Arc<Session>> {
        let mut inner = self.inner();
        inner.spares.retain(|s| !s.is_gone());
        let spare = inner
            .spares
            .iter()
            .find(|s| !inner.in_use.contains(&(key.clone(), s.id.clone())))
            .cloned()?;
        inner.in_use.insert((key.clone(), spare.id.clone()));
        Some(spare)
    }

    /// Adds a new spare session, taken for a permit of `key`.
    pub(crate) fn add_spare(&self, key: &LockKey, spare: Arc<Session>) {
        let mut inner = self.inner();
        inner.in_use.insert((key.clone(), spare.id.clone()));
        inner.spares.push(spare);
    }

    /// Gives `session` back from `key`. Returns it if it is a spare that no permit
    /// uses any more: the caller destroys it.
    pub(crate) fn put_back(&self, key: &LockKey, session: &str) -> Option<Arc<Session>> {
        let mut inner = self.inner();
        inner.in_use.remove(&(key.clone(), session.to_owned()));
        if inner.in_use.iter().any(|(_, s)| s == session) {
            return None;
        }
        let at = inner.spares.iter().position(|s| s.id == session)?;
        Some(inner.spares.swap_remove(at))
    }

    /// Every spare session, for the driver's drop.
    pub(crate) fn drain_spares(&self) -> Vec<Arc<Session>> {
        std::mem::take(&mut self.inner().spares)
    }
}
