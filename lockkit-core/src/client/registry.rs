//! The holds of one [`super::Locker`], by `(key, owner)`: how reentrant acquires
//! find their hold, and what the watchdog renews.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::time::Instant;

use super::hold::Hold;
use super::locker::Inner;
use crate::types::{LockKey, OwnerId};

/// The holds of one `Locker`, and the watchdog's schedule.
#[derive(Default)]
pub(crate) struct Registry {
    map: HashMap<(LockKey, OwnerId), Weak<Hold>>,
    /// When the watchdog will next look at the holds by itself; `None` when it is
    /// idle or not started.
    watchdog_wakes_at: Option<Instant>,
}

impl Inner {
    fn holds(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.holds.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `owner`'s live hold on `key`, re-entered (its count taken) if there is one.
    pub(crate) fn reenter(&self, key: &LockKey, owner: &OwnerId) -> Option<Arc<Hold>> {
        let holds = self.holds();
        let hold = holds.map.get(&(key.clone(), owner.clone()))?.upgrade()?;
        hold.try_reenter().then_some(hold)
    }

    /// Registers the hold `make` builds — or re-enters the one a concurrent acquire
    /// by the same owner registered first. Returns it, and whether the watchdog
    /// must wake for it (it is due before the watchdog's next round).
    pub(crate) fn register(&self, make: impl FnOnce() -> Hold) -> (Arc<Hold>, bool) {
        let mut holds = self.holds();
        let hold = make();
        let slot = (hold.key.clone(), hold.owner.clone());
        let hold = match holds.map.get(&slot).and_then(Weak::upgrade) {
            Some(existing) if existing.try_reenter() => existing,
            _ => {
                let hold = Arc::new(hold);
                holds.map.insert(slot, Arc::downgrade(&hold));
                hold.meter.started();
                hold
            }
        };
        // Read under the same lock the watchdog schedules under.
        let wake = hold.renew_ttl.is_some()
            && holds
                .watchdog_wakes_at
                .is_none_or(|at| hold.next_renewal() < at);
        (hold, wake)
    }

    /// Forgets a hold that was released or lost.
    pub(crate) fn forget(&self, hold: &Hold) {
        hold.meter.ended(hold.lost_reason().is_some());
        let mut holds = self.holds();
        let slot = (hold.key.clone(), hold.owner.clone());
        if let Some(existing) = holds.map.get(&slot)
            && std::ptr::eq(existing.as_ptr(), hold)
        {
            holds.map.remove(&slot);
        }
    }

    /// Holds the watchdog should renew now (due, or nearly), and when the next one
    /// is due.
    pub(crate) fn watched_holds(&self, now: Instant) -> (Vec<Arc<Hold>>, Option<Instant>) {
        let mut holds = self.holds();
        holds.map.retain(|_, h| h.strong_count() > 0);
        let mut due = Vec::new();
        let mut next: Option<Instant> = None;
        for hold in holds.map.values().filter_map(Weak::upgrade) {
            if hold.renew_ttl.is_none() || hold.is_released() || !hold.is_live() {
                continue;
            }
            let at = hold.next_renewal();
            // Renewing up to ttl/6 early is harmless and puts holds taken at
            // slightly different times on one schedule: one batch per round.
            let slack = hold.renew_ttl.map_or(Duration::ZERO, |ttl| ttl / 6);
            if at <= now + slack {
                due.push(hold);
            } else {
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        // With work due the watchdog rescans at once; otherwise it sleeps until
        // `next` (forever if `None`).
        holds.watchdog_wakes_at = if due.is_empty() { next } else { Some(now) };
        (due, next)
    }
}
