//! `mem://`: the process-local reference driver.
//!
//! Holds live in a map inside this process, so it gives no protection across
//! processes; it exists to define the contract precisely (the conformance suite's
//! reference), to test the client machinery, and for single-process programs and
//! tests. `mem://` is the process-wide default store; `mem://name` is a named store,
//! shared by every driver connected to the same name.
//!
//! Waiters are woken by [`tokio::sync::Notify::notify_one`]: one release wakes one
//! waiter, and a waiter whose future is dropped passes its wake-up on.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Notify;
use tokio::time::{Instant, sleep_until};

use crate::driver::{
    AcquireRequest, Capabilities, ConnectFuture, DriverEntry, Grant, LockDriver, WakeUp,
};
use crate::error::{LockError, Result};
use crate::types::{FencingToken, LockKey, OwnerId};

/// How the facade finds this driver.
pub const DRIVER: DriverEntry = DriverEntry::new("mem", &["mem"], "mem", connect);

fn connect(url: &str) -> ConnectFuture {
    let parsed = parse_url(url);
    Box::pin(async move {
        let name = parsed?;
        Ok(Arc::new(MemDriver::named(&name)) as Arc<dyn LockDriver>)
    })
}

fn parse_url(url: &str) -> Result<String> {
    let parsed = crate::url::ParsedUrl::parse(url, &["mem"], "mem:// or mem://NAME")?;
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
}

#[derive(Debug)]
struct Slot {
    holder: Option<Holder>,
    /// The last token handed out for this key; never reset, so tokens only grow.
    counter: u64,
    wake: Arc<Notify>,
}

#[derive(Debug, Clone)]
struct Holder {
    owner: OwnerId,
    token: FencingToken,
    expires: Instant,
}

impl Holder {
    fn live(&self, now: Instant) -> bool {
        self.expires > now
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
        let mut stores = registry().lock().unwrap_or_else(|e| e.into_inner());
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

    fn evict(&self, key: &LockKey) -> bool {
        let mut slots = self.store.slots();
        let Some(slot) = slots.get_mut(key) else {
            return false;
        };
        let was_live = slot.holder.take().is_some_and(|h| h.live(Instant::now()));
        slot.wake.notify_one();
        was_live
    }
}

impl Store {
    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<LockKey, Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }
}

enum Attempt {
    Granted(Grant),
    Busy { wake: Arc<Notify>, expires: Instant },
}

impl MemDriver {
    fn attempt(&self, req: &AcquireRequest, started: Instant) -> Attempt {
        let mut slots = self.store.slots();
        let slot = slots.entry(req.key.clone()).or_insert_with(|| Slot {
            holder: None,
            counter: 0,
            wake: Arc::new(Notify::new()),
        });
        let now = Instant::now();
        let token = match &slot.holder {
            Some(h) if h.live(now) && h.owner == req.owner => h.token,
            Some(h) if h.live(now) => {
                return Attempt::Busy {
                    wake: slot.wake.clone(),
                    expires: h.expires,
                };
            }
            _ => {
                slot.counter += 1;
                FencingToken(slot.counter)
            }
        };
        let expires = started + req.ttl;
        slot.holder = Some(Holder {
            owner: req.owner.clone(),
            token,
            expires,
        });
        Attempt::Granted(Grant::new(
            req.key.clone(),
            req.owner.clone(),
            token,
            expires,
        ))
    }
}

#[async_trait]
impl LockDriver for MemDriver {
    fn name(&self) -> &'static str {
        "mem"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            cross_process: false,
            wake_up: WakeUp::Notify,
            ..Capabilities::baseline()
        }
    }

    async fn acquire(&self, req: &AcquireRequest) -> Result<Grant> {
        let started = Instant::now();
        loop {
            let (wake, expires) = match self.attempt(req, started.max(Instant::now())) {
                Attempt::Granted(grant) => return Ok(grant),
                Attempt::Busy { wake, expires } => (wake, expires),
            };
            let give_up = req.keep_waiting(started)?;
            // A release between `attempt` and here leaves a permit in `wake`, so it
            // is not missed.
            let until = give_up.map_or(expires, |d| d.min(expires));
            tokio::select! {
                _ = wake.notified() => {}
                _ = sleep_until(until) => {}
                _ = req.cancel.cancelled() => return Err(req.cancelled()),
            }
        }
    }

    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant> {
        let sent = Instant::now();
        let mut slots = self.store.slots();
        match slots.get_mut(key).and_then(|s| s.holder.as_mut()) {
            Some(h) if &h.owner == owner && h.live(sent) => {
                h.expires = sent + ttl;
                Ok(h.expires)
            }
            _ => Err(LockError::lost(key, "not held by this owner any more")),
        }
    }

    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        Ok(self.evict(key))
    }

    async fn purge(&self, key: &LockKey) -> Result<()> {
        if let Some(slot) = self.store.slots().remove(key) {
            slot.wake.notify_waiters();
        }
        Ok(())
    }

    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        let mut slots = self.store.slots();
        let Some(slot) = slots.get_mut(key) else {
            return Ok(false);
        };
        match &slot.holder {
            Some(h) if &h.owner == owner => {
                let was_live = h.live(Instant::now());
                slot.holder = None;
                slot.wake.notify_one();
                Ok(was_live)
            }
            _ => Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_stores() {
        assert_eq!(parse_url("mem://").unwrap(), "");
        assert_eq!(parse_url("mem://orders").unwrap(), "orders");
        assert!(matches!(
            parse_url("mem://a/b"),
            Err(LockError::InvalidUrl { .. })
        ));
        assert!(matches!(
            parse_url("memx://"),
            Err(LockError::InvalidUrl { .. })
        ));
        assert_eq!(parse_url("MEM://orders").unwrap(), "orders");
        let e = parse_url("mem://orders?prefix=x").unwrap_err().to_string();
        assert!(e.contains("unknown option `prefix`"), "{e}");
    }
}
