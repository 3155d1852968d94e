//! The holds of one [`super::Locker`], by key and owner: how reentrant acquires
//! find their hold, and what the watchdog renews.
//!
//! Every acquire registers its hold and every release forgets it, so neither
//! may cost a contended lock or a hop to another thread. The holds live in
//! [`SHARDS`] maps, each behind its own lock and picked by the key's hash, so
//! clients on different keys rarely meet; and the watchdog's schedule is one
//! atomic: a hold wakes the watchdog only when it is due before the watchdog's
//! next look, which in a steady stream of holds of one TTL is once per `ttl / 3`,
//! not once per hold.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tokio::time::Instant;

use super::hold::Hold;
use super::locker::Inner;
use crate::sync::lock;
use crate::types::{LockKey, OwnerId};

/// How many independently locked maps the holds are spread over.
const SHARDS: usize = 16;

/// `u64::MAX` in [`Registry::watchdog_wakes_at`]: the watchdog sleeps until woken.
const IDLE: u64 = u64::MAX;

/// A key's holds: one per owner holding it through this `Locker` (a read lock
/// or a permit can have several).
type Holders = Vec<(u128, Weak<Hold>)>;

/// The holds of one `Locker`, and the watchdog's schedule.
pub(crate) struct Registry {
    shards: [Mutex<HashMap<LockKey, Holders>>; SHARDS],
    /// When the watchdog will next look at the holds by itself, in nanoseconds
    /// after `epoch`; [`IDLE`] when it waits to be woken.
    watchdog_wakes_at: AtomicU64,
    epoch: Instant,
}

impl Default for Registry {
    fn default() -> Self {
        Self {
            shards: std::array::from_fn(|_| Mutex::default()),
            watchdog_wakes_at: AtomicU64::new(IDLE),
            epoch: Instant::now(),
        }
    }
}

impl Registry {
    fn shard(&self, key: &LockKey) -> MutexGuard<'_, HashMap<LockKey, Holders>> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut h);
        let shard = &self.shards[h.finish() as usize % SHARDS];
        lock(shard)
    }

    /// `at` on the schedule's clock (saturating; never [`IDLE`]).
    fn ticks(&self, at: Instant) -> u64 {
        let nanos = at.saturating_duration_since(self.epoch).as_nanos();
        u64::try_from(nanos).unwrap_or(IDLE - 1).min(IDLE - 1)
    }
}

impl Inner {
    /// `owner`'s live hold on `key`, re-entered (its count taken) if there is one.
    pub(crate) fn reenter(&self, key: &LockKey, owner: &OwnerId) -> Option<Arc<Hold>> {
        let shard = self.holds.shard(key);
        let (_, hold) = shard
            .get(key)?
            .iter()
            .find(|(id, _)| *id == owner.as_u128())?;
        let hold = hold.upgrade()?;
        hold.try_reenter().then_some(hold)
    }

    /// Registers the hold `make` builds — or re-enters the one a concurrent acquire
    /// by the same owner registered first. Returns it, and whether the watchdog
    /// must wake for it (it is due before the watchdog's next look).
    pub(crate) fn register(&self, make: impl FnOnce() -> Hold) -> (Arc<Hold>, bool) {
        let made = make();
        let owner = made.owner.as_u128();
        let hold = {
            let mut shard = self.holds.shard(&made.key);
            let holders = match shard.get_mut(&made.key) {
                Some(holders) => holders,
                None => shard.entry(made.key.clone()).or_default(),
            };
            let existing = holders
                .iter()
                .find(|(id, _)| *id == owner)
                .and_then(|(_, h)| h.upgrade());
            match existing {
                Some(existing) if existing.try_reenter() => existing,
                _ => {
                    let hold = Arc::new(made);
                    holders.retain(|(id, h)| *id != owner && h.strong_count() > 0);
                    holders.push((owner, Arc::downgrade(&hold)));
                    hold.meter.started();
                    hold
                }
            }
        };
        let wake = hold.renew_ttl.is_some() && {
            let due = self.holds.ticks(hold.next_renewal());
            self.holds
                .watchdog_wakes_at
                .fetch_min(due, Ordering::AcqRel)
                > due
        };
        (hold, wake)
    }

    /// Forgets a hold that was released or lost.
    pub(crate) fn forget(&self, hold: &Hold) {
        hold.meter.ended(hold.lost_reason().is_some());
        let mut shard = self.holds.shard(&hold.key);
        if let Some(holders) = shard.get_mut(&hold.key) {
            holders.retain(|(_, h)| !std::ptr::eq(h.as_ptr(), hold) && h.strong_count() > 0);
            if holders.is_empty() {
                shard.remove(&hold.key);
            }
        }
    }

    /// Holds the watchdog should renew now (due, or nearly), and when the next one
    /// is due. Sets the watchdog's schedule to that.
    pub(crate) fn watched_holds(&self, now: Instant) -> (Vec<Arc<Hold>>, Option<Instant>) {
        // Idle while scanning: a hold registered meanwhile, in a shard already
        // scanned, finds the schedule later than its renewal and wakes the
        // watchdog, which then looks again.
        self.holds.watchdog_wakes_at.store(IDLE, Ordering::Release);
        let mut due = Vec::new();
        let mut next: Option<Instant> = None;
        for shard in &self.holds.shards {
            let mut shard = lock(shard);
            shard.retain(|_, holders| {
                holders.retain(|(_, h)| h.strong_count() > 0);
                !holders.is_empty()
            });
            for hold in shard.values().flatten().filter_map(|(_, h)| h.upgrade()) {
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
        }
        // With work due the watchdog looks again at once; otherwise it sleeps
        // until `next` (until woken if `None`). Lowered, never raised: a hold
        // registered during the scan may already have set an earlier time.
        let wakes_at = match (due.is_empty(), next) {
            (false, _) => self.holds.ticks(now),
            (true, Some(at)) => self.holds.ticks(at),
            (true, None) => IDLE,
        };
        self.holds
            .watchdog_wakes_at
            .fetch_min(wakes_at, Ordering::AcqRel);
        (due, next)
    }
}
