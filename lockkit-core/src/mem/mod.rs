//! `mem://`: the process-local reference driver.
//!
//! Holds live in a map inside this process (invariant MEM1); it exists to define
//! the contract precisely (the conformance suite's reference), to test the client
//! machinery, and for single-process programs and tests. `mem://` is the
//! process-wide default store; `mem://name` is a named store, shared by every
//! driver connected to the same name.
//!
//! It grants every mode — exclusive, shared, semaphore permits — and inspects.
//! Waiters queue per key and are served first come, first served: a reader never
//! overtakes a writer queued before it, and queued permits count against the
//! limit. A release wakes exactly the waiters it makes room for (one, for a
//! mutex), plus the next one in line.
//!
//! # Invariants
//!
//! What exclusion and fencing rest on (MEM1…), each with the test that proves
//! it, in the `mem` conformance suite (`tests/conformance.rs`) or this module's
//! tests.
//!
//! 1. **One mutex decides, in this process only.** Every grant, renewal and
//!    release runs under the store's mutex. A store lives in this process's
//!    memory: it gives no protection across processes (`cross_process` is
//!    false; the suite skips the cases that need a second process), and nothing
//!    of it survives the process (`mutual_exclusion_under_contention`,
//!    `writer_excludes_readers_and_writers`,
//!    `at_most_limit_permits_under_contention`,
//!    `release_never_deletes_a_newer_holders_lock`).
//! 2. **Tokens only grow.** A key's counter is bumped by every grant of every
//!    mode, and reset by nothing but `purge`, which drops the key
//!    (`fencing_tokens_increase_across_holders`,
//!    `permit_tokens_increase_across_permits`).
//! 3. **A lease ends on one clock.** A grant's deadline and the hold's expiry in
//!    the store are one instant of tokio's monotonic clock, and an extend pushes
//!    it out only before it has passed (`expired_lease_is_reacquirable`,
//!    `extend_keeps_the_lock_and_fails_after_loss`,
//!    `lost_signal_fires_when_hold_disappears`).
//! 4. **A wake-up is only a hint.** A woken waiter runs its attempt again under
//!    the mutex; the first one blocked looks again at the holders' earliest
//!    expiry, which nobody announces (`a_release_wakes_one_waiter`, `fifo_order`,
//!    `a_dropped_wait_leaves_the_queue_and_lets_the_next_in`).
//!
//! # Examples
//!
//! ```
//! use std::sync::Arc;
//! use lockkit::{Locker, mem::MemDriver}; // `mem`: the `mem` feature
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), lockkit::LockError> {
//! // Two clients of the store named `billing`, as `mem://billing` connects them.
//! let a = Locker::new(Arc::new(MemDriver::named("billing")));
//! let b = lockkit::connect("mem://billing").await?;
//! let guard = a.try_lock("nightly-report").await?;
//! assert!(b.try_lock("nightly-report").await.is_err());
//! assert!(b.is_locked("nightly-report").await?);
//!
//! // A private store shares nothing.
//! let c = Locker::new(Arc::new(MemDriver::new()));
//! assert!(!c.is_locked("nightly-report").await?);
//! guard.release().await?;
//! # Ok(()) }
//! ```

mod at_once;
mod contender;
mod slot;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Notify;
use tokio::time::Instant;

use self::contender::MemContender;
use self::slot::Slot;
use crate::driver::{
    AcquireRequest, Capabilities, ChangeSignal, Contention, Driver, DriverEntry, Grant, Inspect,
    Inspection, LockDriver, LockMode, WaitPolicy, WakeUp, armed,
};
use crate::error::{LockError, Result};
use crate::sync::lock;
use crate::types::{LockKey, OwnerId};

/// The driver's name.
pub(crate) const NAME: &str = "mem";

/// How the facade finds this driver.
pub const DRIVER: DriverEntry = DriverEntry::of::<MemDriver>();

impl Driver for MemDriver {
    const NAME: &'static str = NAME;
    const URL_SCHEMES: &'static [&'static str] = &["mem"];
    /// The store's name.
    type Options = String;

    fn options(url: &str) -> Result<String> {
        parse_url(url)
    }

    async fn connect(name: String) -> Result<Arc<dyn LockDriver>> {
        Ok(Arc::new(MemDriver::named(&name)))
    }
}

fn parse_url(url: &str) -> Result<String> {
    let parsed = crate::url::ParsedUrl::parse(
        url,
        <MemDriver as Driver>::URL_SCHEMES,
        "mem:// or mem://NAME",
    )?;
    let rest = parsed
        .body()
        .strip_prefix("//")
        .ok_or_else(|| parsed.invalid("a mem URL is `mem://` or `mem://NAME`"))?;
    let name = rest.trim_end_matches('/');
    if name.contains(['/', '@', ':']) {
        return Err(
            parsed.invalid("a mem store name is a single word (letters, digits, `-`, `_`, `.`)")
        );
    }
    parsed.query.finish()?;
    Ok(name.to_string())
}

/// The process-local reference driver. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct MemDriver {
    store: Arc<Store>,
}

#[derive(Debug, Default)]
struct Store {
    slots: Mutex<HashMap<LockKey, Slot>>,
    waiters: AtomicU64,
    /// Notified at every grant, release and new value, for `watch`.
    changed: Arc<Notify>,
}

impl Store {
    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<LockKey, Slot>> {
        lock(&self.slots)
    }

    /// A queue entry's id and wake-up.
    fn new_waiter(&self) -> (u64, Arc<Notify>) {
        (
            self.waiters.fetch_add(1, Ordering::Relaxed),
            Arc::new(Notify::new()),
        )
    }
}

fn registry() -> &'static Mutex<HashMap<String, Weak<Store>>> {
    static STORES: OnceLock<Mutex<HashMap<String, Weak<Store>>>> = OnceLock::new();
    STORES.get_or_init(Default::default)
}

impl Default for MemDriver {
    fn default() -> Self {
        Self::new()
    }
}

impl MemDriver {
    /// A driver over a private store of its own.
    pub fn new() -> Self {
        Self {
            store: Arc::default(),
        }
    }

    /// A driver over the store called `name` (created if needed), shared by every
    /// driver in this process with the same name. `mem://NAME` connects here.
    pub fn named(name: &str) -> Self {
        let mut stores = lock(registry());
        stores.retain(|_, s| s.strong_count() > 0);
        let store = match stores.get(name).and_then(Weak::upgrade) {
            Some(store) => store,
            None => {
                let store = Arc::new(Store::default());
                stores.insert(name.to_string(), Arc::downgrade(&store));
                store
            }
        };
        Self { store }
    }
}

/// Waiters are woken by the release that makes room for them; the poll is only
/// a fallback, which a mem wait never needs.
const POLICY: WaitPolicy = WaitPolicy::DEFAULT;

#[async_trait]
impl LockDriver for MemDriver {
    fn name(&self) -> &'static str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::baseline()
            .with_shared(true)
            .with_permits(true)
            .with_inspect(Inspect::HoldersAndWaiters)
            .with_fair(true)
            .with_cross_process(false)
            .with_wake_up(WakeUp::Notify)
            .with_proclaim(true)
            .with_list(true)
            .with_watch(true)
            .with_several_keys_at_once(true)
    }

    async fn try_acquire_all(&self, reqs: &[AcquireRequest]) -> Result<Option<Vec<Grant>>> {
        self.take_all(reqs)
    }

    async fn contend<'a>(&'a self, req: &'a AcquireRequest) -> Result<Contention<'a>> {
        let contender = MemContender {
            driver: self,
            req,
            queued: None,
        };
        Ok(Contention::new(contender).with_policy(POLICY))
    }

    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant> {
        let sent = Instant::now();
        let mut slots = self.store.slots();
        let own = slots
            .get_mut(key)
            .and_then(|s| s.holders.iter_mut().find(|h| &h.owner == owner));
        match own {
            Some(h) if h.expires > sent => {
                h.expires = sent + ttl;
                Ok(h.expires)
            }
            _ => Err(LockError::lost(key, "not held by this owner any more")),
        }
    }

    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        let mut slots = self.store.slots();
        let Some(slot) = slots.get_mut(key) else {
            return Ok(false);
        };
        let Some(pos) = slot.holders.iter().position(|h| &h.owner == owner) else {
            return Ok(false);
        };
        let was_live = slot.holders.swap_remove(pos).expires > Instant::now();
        slot.wake_next();
        // Under the lock: an observer woken reads the key after the change.
        self.store.changed.notify_waiters();
        Ok(was_live)
    }

    async fn proclaim(&self, key: &LockKey, owner: &OwnerId, text: &str) -> Result<()> {
        let now = Instant::now();
        let mut slots = self.store.slots();
        let own = slots
            .get_mut(key)
            .and_then(|s| s.holders.iter_mut().find(|h| &h.owner == owner));
        match own {
            Some(h) if h.expires > now && h.mode == LockMode::Exclusive => {
                h.text = Some(text.to_owned());
                self.store.changed.notify_waiters();
                Ok(())
            }
            _ => Err(LockError::lost(key, "not held by this owner any more")),
        }
    }

    async fn list(&self, prefix: &str, limit: usize) -> Result<Vec<LockKey>> {
        let now = Instant::now();
        let slots = self.store.slots();
        let mut keys: Vec<LockKey> = slots
            .iter()
            .filter(|(k, s)| {
                k.as_str().starts_with(prefix) && s.holders.iter().any(|h| h.expires > now)
            })
            .map(|(k, _)| k.clone())
            .collect();
        keys.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        keys.truncate(limit);
        Ok(keys)
    }

    async fn watch(&self, key: &LockKey) -> Result<ChangeSignal> {
        let _ = key;
        Ok(armed(self.store.changed.clone()))
    }

    async fn inspect(&self, key: &LockKey) -> Result<Inspection> {
        let slots = self.store.slots();
        Ok(match slots.get(key) {
            Some(slot) => slot.inspection(key, Instant::now()),
            None => Inspection::free(key.clone()).with_waiters(0),
        })
    }

    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        let mut slots = self.store.slots();
        let Some(slot) = slots.get_mut(key) else {
            return Ok(false);
        };
        let now = Instant::now();
        let had_live = slot.holders.drain(..).any(|h| h.expires > now);
        slot.wake_next();
        self.store.changed.notify_waiters();
        Ok(had_live)
    }

    async fn purge(&self, key: &LockKey) -> Result<()> {
        if let Some(slot) = self.store.slots().remove(key) {
            // Its waiters queue again on the fresh key.
            for q in &slot.queue {
                q.wake.notify_one();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
