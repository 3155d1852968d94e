//! One mem acquire, as the wait engine drives it.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::MemDriver;
use super::NAME;
use super::slot::Queued;
use crate::driver::{AcquireRequest, Admission, Attempt, Busy, Contender, Grant, Wait, admit};
use crate::error::Result;

pub(super) struct MemContender<'a> {
    pub(super) driver: &'a MemDriver,
    pub(super) req: &'a AcquireRequest,
    /// Our place in the key's queue, once we wait.
    pub(super) queued: Option<(u64, Arc<Notify>)>,
}

#[async_trait]
impl Contender for MemContender<'_> {
    async fn attempt(&mut self) -> Result<Attempt> {
        let req = self.req;
        let mut slots = self.driver.store.slots();
        let slot = slots.entry(req.key.clone()).or_default();
        let now = Instant::now();
        slot.prune(now);
        // A purge empties the queue: queue again, at the back.
        let pos = self.queued.as_ref().and_then(|(id, _)| slot.position(*id));
        let expires = now + req.ttl;
        let token = match admit(NAME, req, &slot.held(), slot.ahead(pos)) {
            Admission::Reenter(token) => {
                // A retry after an unknown outcome, or a read under our write hold:
                // the hold stays as it is, with a fresh lease.
                for own in slot.holders.iter_mut().filter(|h| h.owner == req.owner) {
                    own.expires = expires;
                }
                return Ok(Attempt::Granted(Grant::of(req, token, expires)));
            }
            Admission::Admit => slot.hold(req, expires),
            Admission::Refuse(e) => return Err(e),
            Admission::Wait => {
                if req.wait == Wait::NoWait {
                    return Ok(Attempt::Busy(Busy::poll()));
                }
                if pos.is_none() {
                    let (id, wake) = self.driver.store.new_waiter();
                    slot.queue.push_back(Queued {
                        id,
                        mode: req.mode,
                        wake: wake.clone(),
                    });
                    self.queued = Some((id, wake));
                }
                let wake = self.queued.as_ref().map(|(_, w)| w.clone());
                let retry_at = slot.recheck_at(now);
                let busy = Busy::until(retry_at);
                return Ok(Attempt::Busy(match wake {
                    Some(wake) => busy.with_wake(Box::pin(async move {
                        wake.notified_owned().await;
                        Ok(())
                    })),
                    None => busy,
                }));
            }
        };
        if let Some((id, _)) = self.queued.take() {
            // Leaving the queue may let the next waiters in (more readers, permits).
            slot.remove_waiter(id);
        }
        self.driver.store.changed.notify_waiters();
        Ok(Attempt::Granted(Grant::of(req, token, expires)))
    }
}

impl Drop for MemContender<'_> {
    /// However the wait ends — given up, cancelled, or its future dropped — the
    /// queue entry goes, and whoever it held back is woken.
    fn drop(&mut self) {
        if let Some((id, _)) = self.queued.take()
            && let Some(slot) = self.driver.store.slots().get_mut(&self.req.key)
        {
            slot.remove_waiter(id);
        }
    }
}
