//! The KV table: entries (Consul's `DirEntry`), tombstones and the table's own
//! index, and what each write does to them (after `agent/consul/state/kvs.go`).

use std::collections::BTreeMap;

use super::super::duration::go_quote;

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

/// The KV table: entries, tombstones and the table's own index. Cloned by a
/// transaction, which applies its operations to the copy and keeps it only if
/// every one succeeds.
#[derive(Debug, Clone, Default)]
pub(crate) struct Kv {
    pub(super) entries: BTreeMap<String, Entry>,
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
    pub(super) fn put(&mut self, idx: u64, mut entry: Entry, update_session: bool) -> Entry {
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
