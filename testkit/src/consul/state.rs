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

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use super::duration::go_quote;

/// The node every session belongs to: the stand-in is a one-node cluster.
pub(crate) const NODE: &str = "lockkit-standin";
/// The one node health check, always passing (Consul's `serfHealth`).
pub(crate) const SERF_HEALTH: &str = "serfHealth";
/// Consul's `structs.MaxLockDelay`: a longer lock-delay is cut to this.
const MAX_LOCK_DELAY: Duration = Duration::from_secs(60);

/// One KV entry (Consul's `DirEntry`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) key: String,
    pub(crate) flags: u64,
    /// `None` is Go's nil slice: JSON `null`.
    pub(crate) value: Option<Vec<u8>>,
    /// The lock holder; `None` when unlocked.
    pub(crate) session: Option<String>,
    pub(crate) lock_index: u64,
    pub(crate) create_index: u64,
    pub(crate) modify_index: u64,
}

impl Entry {
    /// A new entry as a request describes it (indexes filled in by the store).
    pub(crate) fn new(key: &str, flags: u64, value: Option<Vec<u8>>) -> Self {
        Self {
            key: key.to_owned(),
            flags,
            value,
            session: None,
            lock_index: 0,
            create_index: 0,
            modify_index: 0,
        }
    }

    /// Consul's `DirEntry.Equal`: everything but the raft indexes (an empty value
    /// equals a nil one, as `bytes.Equal` has it).
    fn same_content(&self, other: &Entry) -> bool {
        let bytes = |v: &Option<Vec<u8>>| v.as_deref().unwrap_or_default().to_vec();
        self.key == other.key
            && self.flags == other.flags
            && self.lock_index == other.lock_index
            && self.session == other.session
            && bytes(&self.value) == bytes(&other.value)
    }
}

/// What happens to a session's locks when it is invalidated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Behavior {
    /// The locks are released: `Session` cleared, value kept.
    Release,
    /// The locked keys are deleted.
    Delete,
}

impl Behavior {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Behavior::Release => "release",
            Behavior::Delete => "delete",
        }
    }
}

/// One session.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) lock_delay_ns: i64,
    pub(crate) behavior: Behavior,
    /// The TTL as the client wrote it ("" for none).
    pub(crate) ttl: String,
    /// The TTL, already multiplied by the stand-in's `ttl_scale`; `None`: no TTL.
    pub(crate) scaled_ttl: Option<Duration>,
    pub(crate) node_checks: Vec<String>,
    pub(crate) create_index: u64,
    pub(crate) modify_index: u64,
    /// When the TTL timer invalidates it.
    pub(crate) expires: Option<Instant>,
}

/// A session as `/v1/session/create` describes it, validated by the HTTP layer.
#[derive(Debug)]
pub(crate) struct SessionSpec {
    pub(crate) name: String,
    pub(crate) lock_delay_ns: i64,
    pub(crate) behavior: Behavior,
    pub(crate) ttl: String,
    pub(crate) ttl_ns: i64,
    pub(crate) node_checks: Vec<String>,
}

/// The KV table: entries, tombstones and the table's own index. Cloned by a
/// transaction, which applies its operations to the copy and keeps it only if
/// every one succeeds.
#[derive(Debug, Clone, Default)]
pub(crate) struct Kv {
    entries: BTreeMap<String, Entry>,
    /// Deleted keys and the index of their deletion.
    tombstones: BTreeMap<String, u64>,
    /// The last index that changed an entry or a tombstone (`kvsMaxIndex`).
    table_index: u64,
}

/// The result of a lock or unlock attempt that reached the store.
pub(crate) type LockResult = Result<Option<Entry>, String>;

impl Kv {
    pub(crate) fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.get(key)
    }

    /// The index a read of `key` reports: its `ModifyIndex`, or for a missing key
    /// the table's index; never 0.
    pub(crate) fn key_index(&self, key: &str) -> u64 {
        self.entries
            .get(key)
            .map_or(self.table_index, |e| e.modify_index)
            .max(1)
    }

    /// Moves whenever `key` itself changes (written, deleted, recreated): what a
    /// blocking query on the key waits for, like Consul's per-key watch channel.
    pub(crate) fn key_version(&self, key: &str) -> u64 {
        match self.entries.get(key) {
            Some(e) => e.modify_index,
            None => self.tombstones.get(key).copied().unwrap_or(0),
        }
    }

    /// The entries under `prefix`, and the index a list reports: the highest
    /// `ModifyIndex` among them and the tombstones under it, or the table's index
    /// for the empty prefix or when there is nothing; never 0.
    pub(crate) fn list(&self, prefix: &str) -> (u64, Vec<Entry>) {
        let entries: Vec<Entry> = self
            .entries
            .range(prefix.to_owned()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(_, e)| e.clone())
            .collect();
        let mut index = entries.iter().map(|e| e.modify_index).max().unwrap_or(0);
        if prefix.is_empty() {
            index = self.table_index;
        } else {
            let dead = self
                .tombstones
                .range(prefix.to_owned()..)
                .take_while(|(k, _)| k.starts_with(prefix))
                .map(|(_, i)| *i)
                .max()
                .unwrap_or(0);
            index = index.max(dead);
        }
        if index == 0 {
            index = self.table_index;
        }
        (index.max(1), entries)
    }

    /// Consul's `kvsSetTxn`: stores `entry` (keeping the existing session unless
    /// `update_session`), skipping the write when nothing changes. Returns the
    /// entry as stored.
    fn put(&mut self, idx: u64, mut entry: Entry, update_session: bool) -> Entry {
        let existing = self.entries.get(&entry.key);
        entry.create_index = existing.map_or(idx, |e| e.create_index);
        if !update_session {
            entry.session = existing.and_then(|e| e.session.clone());
        }
        if let Some(e) = existing
            && e.same_content(&entry)
        {
            return e.clone();
        }
        entry.modify_index = idx;
        self.tombstones.remove(&entry.key);
        self.entries.insert(entry.key.clone(), entry.clone());
        self.table_index = idx;
        entry
    }

    /// A plain set.
    pub(crate) fn set(&mut self, idx: u64, entry: Entry) -> Entry {
        self.put(idx, entry, false)
    }

    /// Set only if the key's `ModifyIndex` is `cas` (0: only if missing).
    pub(crate) fn cas(&mut self, idx: u64, entry: Entry, cas: u64) -> Option<Entry> {
        let matches = match self.entries.get(&entry.key) {
            None => cas == 0,
            Some(e) => cas != 0 && e.modify_index == cas,
        };
        matches.then(|| self.put(idx, entry, false))
    }

    /// Consul's `kvsLockTxn`: takes the lock for `session` if it is free or
    /// already ours (`Ok(None)`: someone else holds it). `session_exists` answers
    /// for the session table.
    pub(crate) fn lock(
        &mut self,
        idx: u64,
        mut entry: Entry,
        session: &str,
        session_exists: bool,
    ) -> LockResult {
        if session.is_empty() {
            return Err("missing session".into());
        }
        if !session_exists {
            return Err(format!("invalid session {}", go_quote(session)));
        }
        match self.entries.get(&entry.key) {
            Some(e) if e.session.as_deref() == Some(session) => {
                entry.lock_index = e.lock_index;
            }
            Some(e) if e.session.is_some() => return Ok(None),
            Some(e) => entry.lock_index = e.lock_index + 1,
            None => entry.lock_index = 1,
        }
        entry.session = Some(session.to_owned());
        Ok(Some(self.put(idx, entry, true)))
    }

    /// Consul's `kvsUnlockTxn`: clears the lock if `session` holds it (`Ok(None)`
    /// otherwise), writing the given value and flags.
    pub(crate) fn unlock(&mut self, idx: u64, mut entry: Entry, session: &str) -> LockResult {
        if session.is_empty() {
            return Err("missing session".into());
        }
        match self.entries.get(&entry.key) {
            Some(e) if e.session.as_deref() == Some(session) => {
                entry.lock_index = e.lock_index;
                entry.session = None;
                Ok(Some(self.put(idx, entry, true)))
            }
            _ => Ok(None),
        }
    }

    /// Deletes `key` (a no-op when missing), leaving a tombstone.
    pub(crate) fn delete(&mut self, idx: u64, key: &str) {
        if self.entries.remove(key).is_some() {
            self.tombstones.insert(key.to_owned(), idx);
            self.table_index = idx;
        }
    }

    /// Consul's `kvsDeleteCASTxn`: deletes if the `ModifyIndex` is `cas`. A
    /// missing key counts as deleted (true), as in Consul.
    pub(crate) fn delete_cas(&mut self, idx: u64, key: &str, cas: u64) -> bool {
        match self.entries.get(key) {
            None => true,
            Some(e) if e.modify_index == cas => {
                self.delete(idx, key);
                true
            }
            Some(_) => false,
        }
    }

    /// Deletes every key under `prefix` (all keys for "").
    pub(crate) fn delete_tree(&mut self, idx: u64, prefix: &str) {
        let doomed: Vec<String> = self
            .entries
            .range(prefix.to_owned()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, _)| k.clone())
            .collect();
        for key in doomed {
            self.delete(idx, &key);
        }
    }
}

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

/// When a session renewed at `now` is invalidated: after its TTL times a factor
/// drawn uniformly from [1, 2] at every renewal. Consul's leader arms a timer of
/// exactly 2×TTL and documents only "between TTL and 2×TTL"; drawing the factor
/// makes a client that counts on either end fail some of the time.
fn deadline(scaled_ttl: Option<Duration>, now: Instant) -> Option<Instant> {
    scaled_ttl.map(|ttl| now + ttl.mul_f64(1.0 + fastrand::f64()))
}

/// A random (version 4) UUID, as Consul's session IDs are.
fn new_uuid() -> String {
    let mut b = fastrand::u128(..).to_be_bytes();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
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

    #[test]
    fn uuids_look_like_uuids() {
        let u = new_uuid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert_eq!(u.matches('-').count(), 4);
    }
}
