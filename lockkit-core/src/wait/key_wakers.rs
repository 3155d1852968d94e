//! [`KeyWakers`]: wake-ups routed by key, so that a release wakes the waiters and
//! observers of its own key only, not every waiter of the driver.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use tokio::sync::Notify;

use crate::sync::lock;

/// Fewest entries before dead ones are swept.
const SWEEP_FLOOR: usize = 64;

/// One [`Notify`] per key that someone waits on or watches, made on demand and
/// gone with its last waiter.
///
/// A driver whose releases are announced with the key (a PostgreSQL `NOTIFY`
/// payload, its own release in this process) wakes only that key's waiters: a
/// driver with waiters on many keys does not send an attempt for each of them
/// on every release. When it cannot tell which key changed (a wake-up channel
/// that was down), it wakes them all.
///
/// # Examples
///
/// ```
/// use futures_util::FutureExt;
/// use lockkit_core::driver::KeyWakers;
///
/// let wakers = KeyWakers::default();
/// let (stock, other) = (wakers.notify("inventory:1"), wakers.notify("inventory:2"));
/// // A waiter registers before its attempt, so that no wake-up is missed.
/// let mut woken = Box::pin(stock.notified());
/// let mut not_woken = Box::pin(other.notified());
/// woken.as_mut().enable();
/// not_woken.as_mut().enable();
///
/// wakers.wake("inventory:1");
/// assert!(woken.now_or_never().is_some());
/// assert!(not_woken.now_or_never().is_none());
/// ```
#[derive(Debug, Default)]
pub struct KeyWakers {
    keys: Mutex<Keys>,
}

#[derive(Debug, Default)]
struct Keys {
    by_key: HashMap<String, Weak<Notify>>,
    /// Sweep the dead entries once there are this many.
    sweep_at: usize,
}

impl KeyWakers {
    /// The wake-up of `key`, shared by everyone who waits on it now. Hold it for
    /// as long as you wait: the entry goes with its last holder.
    pub fn notify(&self, key: &str) -> Arc<Notify> {
        let mut keys = self.keys();
        if let Some(live) = keys.by_key.get(key).and_then(Weak::upgrade) {
            return live;
        }
        let notify = Arc::new(Notify::new());
        keys.by_key.insert(key.to_owned(), Arc::downgrade(&notify));
        if keys.by_key.len() >= keys.sweep_at.max(SWEEP_FLOOR) {
            keys.by_key.retain(|_, w| w.strong_count() > 0);
            keys.sweep_at = keys.by_key.len() * 2;
        }
        notify
    }

    /// Wakes everyone waiting on `key` now.
    pub fn wake(&self, key: &str) {
        let notify = self.keys().by_key.get(key).and_then(Weak::upgrade);
        if let Some(notify) = notify {
            notify.notify_waiters();
        }
    }

    /// Wakes everyone waiting on any key now: after a change that named no key,
    /// or wake-ups that may have been lost.
    pub fn wake_all(&self) {
        let live: Vec<Arc<Notify>> = self
            .keys()
            .by_key
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        for notify in live {
            notify.notify_waiters();
        }
    }

    fn keys(&self) -> MutexGuard<'_, Keys> {
        lock(&self.keys)
    }
}

#[cfg(test)]
mod tests;
