//! One key of a mem store: its holders, its queue of waiters, its token counter.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::driver::{Hold, Holder, Inspection, LockMode, has_room};
use crate::types::{FencingToken, LockKey, OwnerId};

/// When a waiter with no holder to wait for re-checks anyway (a safety net: the
/// waiters ahead of it wake it when they move).
const IDLE_RECHECK: Duration = Duration::from_secs(1);

#[derive(Debug, Default)]
pub(super) struct Slot {
    pub(super) holders: Vec<MemHold>,
    /// Waiters, first come first.
    pub(super) queue: VecDeque<Queued>,
    /// The last token handed out for this key; reset by nothing but `purge`
    /// (which drops the slot), so tokens only grow.
    pub(super) counter: u64,
}

#[derive(Debug, Clone)]
pub(super) struct MemHold {
    pub(super) owner: OwnerId,
    /// Its label and value ([`crate::AcquireRequest::stored_label`]).
    pub(super) text: Option<String>,
    pub(super) mode: LockMode,
    pub(super) token: FencingToken,
    pub(super) expires: Instant,
}

#[derive(Debug)]
pub(super) struct Queued {
    pub(super) id: u64,
    pub(super) mode: LockMode,
    pub(super) wake: Arc<Notify>,
}

impl Slot {
    /// Records `req`'s new hold until `expires`, with the key's next token.
    pub(super) fn hold(
        &mut self,
        req: &crate::driver::AcquireRequest,
        expires: Instant,
    ) -> FencingToken {
        self.counter += 1;
        let token = FencingToken(self.counter);
        self.holders.push(MemHold {
            owner: req.owner.clone(),
            text: req.stored_label(),
            mode: req.mode,
            token,
            expires,
        });
        token
    }

    /// Drops the holds whose lease ran out.
    pub(super) fn prune(&mut self, now: Instant) {
        self.holders.retain(|h| h.expires > now);
    }

    pub(super) fn held(&self) -> Vec<Hold> {
        self.holders
            .iter()
            .map(|h| Hold {
                owner: h.owner.as_u128(),
                mode: h.mode,
                token: h.token,
            })
            .collect()
    }

    pub(super) fn position(&self, id: u64) -> Option<usize> {
        self.queue.iter().position(|q| q.id == id)
    }

    /// The modes queued before position `pos` (the whole queue for `None`).
    pub(super) fn ahead(&self, pos: Option<usize>) -> Vec<LockMode> {
        let end = pos.unwrap_or(self.queue.len());
        self.queue.iter().take(end).map(|q| q.mode).collect()
    }

    /// When the first waiter still blocked should look again by itself: the first
    /// holder's expiry (nobody announces one).
    pub(super) fn recheck_at(&self, now: Instant) -> Instant {
        self.holders
            .iter()
            .map(|h| h.expires)
            .min()
            .unwrap_or(now + IDLE_RECHECK)
    }

    /// Wakes the waiters that now fit, in queue order, and the first that does not
    /// (so that it waits for the current holders' expiry): a release wakes as many
    /// waiters as it makes room for, plus one.
    pub(super) fn wake_next(&self) {
        let mut taken: Vec<LockMode> = self.holders.iter().map(|h| h.mode).collect();
        for q in &self.queue {
            q.wake.notify_one();
            if !has_room(q.mode, taken.iter().copied()) {
                break;
            }
            taken.push(q.mode);
        }
    }

    pub(super) fn remove_waiter(&mut self, id: u64) {
        if let Some(pos) = self.position(id) {
            self.queue.remove(pos);
            self.wake_next();
        }
    }

    pub(super) fn inspection(&self, key: &LockKey, now: Instant) -> Inspection {
        let holders = self
            .holders
            .iter()
            .filter(|h| h.expires > now)
            .map(|h| {
                Holder::new(h.mode, h.token)
                    .with_remaining(h.expires - now)
                    .with_label(h.text.clone())
            })
            .collect();
        Inspection::free(key.clone())
            .with_holders(holders)
            .with_waiters(self.queue.len())
    }
}
