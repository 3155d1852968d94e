//! Several free keys at once ([`crate::LockDriver::try_acquire_all`]): every
//! key is looked at, and then taken, under the store's one lock.

use tokio::time::Instant;

use super::{MemDriver, NAME};
use crate::driver::{AcquireRequest, Admission, Grant, admit};
use crate::error::Result;

impl MemDriver {
    /// Exclusive holds of every key of `reqs`, or none if any is held or has a
    /// waiter (mem serves waiters in order).
    pub(super) fn take_all(&self, reqs: &[AcquireRequest]) -> Result<Option<Vec<Grant>>> {
        let mut slots = self.store.slots();
        let now = Instant::now();
        for req in reqs {
            let slot = slots.entry(req.key.clone()).or_default();
            slot.prune(now);
            match admit(NAME, req, &slot.held(), slot.ahead(None)) {
                Admission::Admit => {}
                Admission::Refuse(e) => return Err(e),
                Admission::Wait | Admission::Reenter(_) => return Ok(None),
            }
        }
        let mut grants = Vec::with_capacity(reqs.len());
        for req in reqs {
            let expires = now + req.ttl;
            let token = slots.entry(req.key.clone()).or_default().hold(req, expires);
            grants.push(Grant::of(req, token, expires));
        }
        self.store.changed.notify_waiters();
        Ok(Some(grants))
    }
}
