//! The stand-in's state: one raft-like index, the KV table with its tombstones,
//! sessions with their TTL deadlines, and lock-delays.
//!
//! Every write that Consul sends through raft takes the next index here, whether
//! or not it changes anything (a failed CAS, a lock held by someone else, an
//! unchanged value): Consul's raft index moves for those too. What a write does to
//! the tables follows `agent/consul/state/kvs.go` and `session.go`:
//!
//! - a write that leaves an entry as it was (same value, flags, session, lock
//!   index) keeps its `ModifyIndex`;
//! - a plain set or CAS keeps the entry's session but writes `LockIndex` 0 (the
//!   request carries none), as Consul's `kvsSetTxn` does;
//! - a delete leaves a tombstone at its index, so an index never slides back;
//! - a read of a missing key reports the KV table's index (entries and
//!   tombstones), at least 1.
//!
//! The KV table is in [`kv_table`], the sessions in [`session_table`]; the [`Store`]
//! here holds both, with the index and the lock-delays.

mod kv_table;
mod session_table;

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

pub(crate) use kv_table::{Entry, Kv};
pub(crate) use session_table::{Behavior, NODE, SERF_HEALTH, Session, SessionSpec};
use session_table::{deadline, new_uuid};

/// Consul's `structs.MaxLockDelay`: a longer lock-delay is cut to this.
const MAX_LOCK_DELAY: Duration = Duration::from_secs(60);

/// Everything behind the stand-in's one mutex.
#[derive(Debug)]
pub(crate) struct Store {
    /// The last raft index handed out.
    index: u64,
    pub(crate) kv: Kv,
    sessions: BTreeMap<String, Session>,
    /// The last index that created or destroyed a session.
    session_table_index: u64,
    /// Keys nobody may lock before the given instant.
    lock_delays: HashMap<String, Instant>,
    ttl_scale: f64,
}

impl Store {
    /// An empty store. Index 1 is taken, as in Consul, where the first raft entry
    /// is the cluster's own configuration.
    pub(crate) fn new(ttl_scale: f64) -> Self {
        Self {
            index: 1,
            kv: Kv::default(),
            sessions: BTreeMap::new(),
            session_table_index: 0,
            lock_delays: HashMap::new(),
            ttl_scale,
        }
    }

    /// The current raft index.
    pub(crate) fn index(&self) -> u64 {
        self.index
    }

    /// Takes the next raft index: one per write that Consul applies through raft.
    pub(crate) fn next_index(&mut self) -> u64 {
        self.index += 1;
        self.index
    }

    pub(crate) fn session(&self, id: &str) -> Option<&Session> {
        self.sessions.get(id)
    }

    pub(crate) fn sessions(&self) -> impl Iterator<Item = &Session> {
        self.sessions.values()
    }

    pub(crate) fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// The index session reads report; never 0.
    pub(crate) fn session_table_index(&self) -> u64 {
        self.session_table_index.max(1)
    }

    /// Is `key` under a lock-delay at `now`?
    pub(crate) fn lock_delayed(&self, key: &str, now: Instant) -> bool {
        self.lock_delays.get(key).is_some_and(|until| *until > now)
    }

    /// Creates a session (one raft write) and starts its TTL timer.
    pub(crate) fn create_session(&mut self, spec: SessionSpec, now: Instant) -> String {
        let id = loop {
            let candidate = new_uuid();
            if !self.sessions.contains_key(&candidate) {
                break candidate;
            }
        };
        let idx = self.next_index();
        let scaled_ttl = (spec.ttl_ns > 0)
            .then(|| Duration::from_nanos(spec.ttl_ns.unsigned_abs()).mul_f64(self.ttl_scale));
        let mut session = Session {
            id: id.clone(),
            name: spec.name,
            lock_delay_ns: spec.lock_delay_ns,
            behavior: spec.behavior,
            ttl: spec.ttl,
            scaled_ttl,
            node_checks: spec.node_checks,
            create_index: idx,
            modify_index: idx,
            expires: None,
        };
        session.expires = deadline(scaled_ttl, now);
        self.sessions.insert(id.clone(), session);
        self.session_table_index = idx;
        id
    }

    /// Resets the TTL timer of a session (not a raft write). `None` if unknown.
    pub(crate) fn renew(&mut self, id: &str, now: Instant) -> Option<Session> {
        let session = self.sessions.get_mut(id)?;
        session.expires = deadline(session.scaled_ttl, now);
        Some(session.clone())
    }

    /// Destroys a session (one raft write, also for an unknown one): its locks
    /// are released or deleted per its behavior, and each gets its lock-delay.
    pub(crate) fn destroy_session(&mut self, id: &str, now: Instant) {
        let idx = self.next_index();
        let Some(session) = self.sessions.remove(id) else {
            return;
        };
        self.session_table_index = idx;
        let held: Vec<Entry> = self
            .kv
            .entries
            .values()
            .filter(|e| e.session.as_deref() == Some(id))
            .cloned()
            .collect();
        let delay =
            Duration::from_nanos(session.lock_delay_ns.max(0).unsigned_abs()).min(MAX_LOCK_DELAY);
        for mut entry in held {
            let key = entry.key.clone();
            match session.behavior {
                Behavior::Release => {
                    entry.session = None;
                    self.kv.put(idx, entry, true);
                }
                Behavior::Delete => self.kv.delete(idx, &key),
            }
            if !delay.is_zero() {
                self.lock_delays.insert(key, now + delay);
            }
        }
        self.lock_delays.retain(|_, until| *until > now);
    }

    /// Invalidates every session whose TTL timer has fired by `now`. True if any.
    pub(crate) fn expire(&mut self, now: Instant) -> bool {
        let due: Vec<String> = self
            .sessions
            .values()
            .filter(|s| s.expires.is_some_and(|at| at <= now))
            .map(|s| s.id.clone())
            .collect();
        for id in &due {
            self.destroy_session(id, now);
        }
        !due.is_empty()
    }

    /// When the next TTL timer fires, if any is running.
    pub(crate) fn next_expiry(&self) -> Option<Instant> {
        self.sessions.values().filter_map(|s| s.expires).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(behavior: Behavior, lock_delay_ms: i64) -> SessionSpec {
        SessionSpec {
            name: String::new(),
            lock_delay_ns: lock_delay_ms * 1_000_000,
            behavior,
            ttl: String::new(),
            ttl_ns: 0,
            node_checks: vec![SERF_HEALTH.into()],
        }
    }

    #[test]
    fn unchanged_writes_keep_the_modify_index_but_take_a_raft_index() {
        let mut s = Store::new(1.0);
        let i1 = s.next_index();
        let e = s.kv.set(i1, Entry::new("k", 0, Some(b"v".to_vec())));
        assert_eq!((e.create_index, e.modify_index), (i1, i1));
        let i2 = s.next_index();
        let e = s.kv.set(i2, Entry::new("k", 0, Some(b"v".to_vec())));
        assert_eq!(e.modify_index, i1);
        assert!(s.index() > i1);
    }

    #[test]
    fn lock_index_counts_new_acquisitions_only() {
        let mut s = Store::new(1.0);
        let now = Instant::now();
        let a = s.create_session(spec(Behavior::Release, 0), now);
        let idx = s.next_index();
        let e =
            s.kv.lock(idx, Entry::new("k", 0, None), &a, true)
                .unwrap()
                .unwrap();
        assert_eq!(e.lock_index, 1);
        let idx = s.next_index();
        let e =
            s.kv.lock(idx, Entry::new("k", 0, None), &a, true)
                .unwrap()
                .unwrap();
        assert_eq!(e.lock_index, 1);
        let idx = s.next_index();
        assert!(
            s.kv.unlock(idx, Entry::new("k", 0, None), &a)
                .unwrap()
                .is_some()
        );
        let idx = s.next_index();
        let e =
            s.kv.lock(idx, Entry::new("k", 0, None), &a, true)
                .unwrap()
                .unwrap();
        assert_eq!(e.lock_index, 2);
    }

    #[test]
    fn destroy_applies_behavior_and_lock_delay() {
        let mut s = Store::new(1.0);
        let now = Instant::now();
        let rel = s.create_session(spec(Behavior::Release, 1000), now);
        let del = s.create_session(spec(Behavior::Delete, 0), now);
        for (key, id) in [("r", &rel), ("d", &del)] {
            let idx = s.next_index();
            let value = Some(b"v".to_vec());
            s.kv.lock(idx, Entry::new(key, 0, value), id, true).unwrap();
        }
        let before = s.kv.get("r").unwrap().modify_index;
        s.destroy_session(&rel, now);
        let r = s.kv.get("r").unwrap();
        assert_eq!(r.session, None);
        assert_eq!(r.value.as_deref(), Some(&b"v"[..]));
        assert!(r.modify_index > before);
        assert!(s.lock_delayed("r", now));
        assert!(!s.lock_delayed("r", now + Duration::from_millis(1001)));
        s.destroy_session(&del, now);
        assert!(s.kv.get("d").is_none());
        assert!(!s.lock_delayed("d", now), "a zero lock-delay sets none");
        assert!(s.kv.key_index("d") >= s.kv.key_version("d"));
    }
}
