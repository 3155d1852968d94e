//! [`HoldTable`]: what a driver keeps of each hold it granted, by key and owner.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::sync::lock;
use crate::types::{LockKey, OwnerId};

/// A driver's record of each hold it granted (its session, node, connection,
/// loss signal…), by `(key, owner)`: one hold per owner and key, as the
/// contract says (a re-entry finds the same record).
///
/// # Examples
///
/// ```
/// use lockkit_core::holds::HoldTable;
/// use lockkit_core::{LockKey, OwnerId};
///
/// let holds = HoldTable::new();
/// let (key, owner) = (LockKey::new("orders")?, OwnerId::new());
/// holds.insert(key.clone(), owner.clone(), "node-0001");
/// assert_eq!(holds.get(&key, &owner), Some("node-0001"));
/// assert_eq!(holds.find(|node| node.ends_with("01")), Some("node-0001"));
/// assert_eq!(holds.remove(&key, &owner), Some("node-0001"));
/// assert!(holds.is_empty());
/// # Ok::<(), lockkit_core::LockError>(())
/// ```
#[derive(Debug)]
pub struct HoldTable<H> {
    map: Mutex<HashMap<(LockKey, OwnerId), H>>,
    /// How many holds there are, read without the lock.
    len: AtomicUsize,
}

impl<H> Default for HoldTable<H> {
    fn default() -> Self {
        Self {
            map: Mutex::default(),
            len: AtomicUsize::new(0),
        }
    }
}

impl<H> HoldTable<H> {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `owner`'s hold of `key`; returns the record it replaces.
    pub fn insert(&self, key: LockKey, owner: OwnerId, hold: H) -> Option<H> {
        let mut map = lock(&self.map);
        let old = map.insert((key, owner), hold);
        self.len.store(map.len(), Ordering::Release);
        old
    }

    /// Forgets `owner`'s hold of `key`, and returns it.
    pub fn remove(&self, key: &LockKey, owner: &OwnerId) -> Option<H> {
        if self.is_empty() {
            return None;
        }
        let mut map = lock(&self.map);
        let hold = map.remove(&(key.clone(), owner.clone()));
        self.len.store(map.len(), Ordering::Release);
        hold
    }

    /// Whether there is no hold: without taking the lock.
    pub fn is_empty(&self) -> bool {
        self.len.load(Ordering::Acquire) == 0
    }
}

impl<H: Clone> HoldTable<H> {
    /// `owner`'s hold of `key`, if there is one.
    pub fn get(&self, key: &LockKey, owner: &OwnerId) -> Option<H> {
        if self.is_empty() {
            return None;
        }
        lock(&self.map).get(&(key.clone(), owner.clone())).cloned()
    }

    /// A hold for which `pred` is true, if there is one.
    pub fn find(&self, pred: impl Fn(&H) -> bool) -> Option<H> {
        lock(&self.map).values().find(|h| pred(h)).cloned()
    }
}
