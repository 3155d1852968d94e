//! One read of a semaphore's keys, and what it says: who holds a slot, who waits
//! and in which order, and how the record changes when a holder joins or leaves.
//!
//! As in Consul's recipe, a session listed in `.lock` holds a slot only while its
//! contender key exists and is locked by it: a session that is invalidated loses
//! its contender key (behavior `delete`), and the next write of the record prunes
//! it. Contenders without a slot wait, in the order their keys were created.
//!
//! `consul lock <prefix>` without `-n` uses `<prefix>/.lock` as a plain lock key
//! (Consul's `api.Lock`): while a session holds it that way, it is a lock of the
//! name, and no permit is granted.

use lockkit_core::Result;

use crate::api::{Api, KvEntry};
use crate::keys::SemaphoreKeys;
use crate::txn_ops::{SEMAPHORE_FLAGS, TxnOp};
use crate::values::SemaphoreRecord;

/// The semaphore's keys as one `?recurse` read saw them.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    /// The index to block on for the next change under the prefix.
    pub(crate) index: u64,
    /// The `.lock` key's ModifyIndex; 0 when there is none (a CAS at 0 creates it).
    pub(crate) record_index: u64,
    record: Option<SemaphoreRecord>,
    /// Whether a session has locked `.lock` itself: `consul lock <prefix>` without
    /// `-n` takes it as a plain lock (Consul's `api.Lock`), which excludes every
    /// permit.
    pub(crate) record_locked: bool,
    /// Contender keys locked by the session they are named after, oldest first.
    contenders: Vec<(String, KvEntry)>,
}

impl Snapshot {
    /// Reads the semaphore (blocking from `block`'s index, if given).
    pub(crate) async fn read(
        api: &Api,
        keys: &SemaphoreKeys,
        block: Option<(u64, std::time::Duration)>,
    ) -> Result<Self> {
        let (entries, index) = api.kv_list(&keys.prefix, block).await?;
        Self::of(keys, entries, index)
    }

    /// What `entries` (a read of the prefix at `index`) say.
    pub(crate) fn of(keys: &SemaphoreKeys, entries: Vec<KvEntry>, index: u64) -> Result<Self> {
        let mut snapshot = Self {
            index,
            record_index: 0,
            record: None,
            record_locked: false,
            contenders: Vec::new(),
        };
        for e in entries {
            if e.key == keys.record {
                snapshot.record_index = e.modify_index;
                snapshot.record_locked = e.session.is_some();
                if !snapshot.record_locked {
                    snapshot.record = SemaphoreRecord::parse(&e.key, e.value().as_deref())?;
                }
            } else if let Some(session) = keys.session_of(&e.key)
                && e.session.as_deref() == Some(session)
            {
                snapshot.contenders.push((session.to_owned(), e));
            }
        }
        snapshot.contenders.sort_by_key(|(_, e)| e.create_index);
        Ok(snapshot)
    }

    /// Whether the record lists `session` as a holder (alive or not).
    pub(crate) fn lists(&self, session: &str) -> bool {
        self.record
            .as_ref()
            .is_some_and(|r| r.holders.get(session) == Some(&true))
    }

    /// The record's limit, if there is a record.
    pub(crate) fn limit(&self) -> Option<u32> {
        self.record.as_ref().map(|r| r.limit)
    }

    /// The sessions holding a slot, with their contender keys, oldest first.
    pub(crate) fn holders(&self) -> impl Iterator<Item = (&str, &KvEntry)> {
        self.contenders
            .iter()
            .filter(|(s, _)| self.lists(s))
            .map(|(s, e)| (s.as_str(), e))
    }

    /// How many slots are held.
    pub(crate) fn held(&self) -> usize {
        self.holders().count()
    }

    /// The limit the holders use, while there are holders.
    pub(crate) fn limit_in_use(&self) -> Option<u32> {
        let record = self.record.as_ref()?;
        (self.held() > 0).then_some(record.limit)
    }

    /// The contenders without a slot, oldest first: the queue.
    pub(crate) fn waiters(&self) -> Vec<(&str, &KvEntry)> {
        self.contenders
            .iter()
            .filter(|(s, _)| !self.lists(s))
            .map(|(s, e)| (s.as_str(), e))
            .collect()
    }

    /// The record with dead holders pruned, `join` added and `leave` removed,
    /// at `limit`.
    pub(crate) fn record_after(
        &self,
        limit: u32,
        join: Option<&str>,
        leave: Option<&str>,
    ) -> SemaphoreRecord {
        let mut holders: std::collections::BTreeMap<String, bool> = self
            .holders()
            .filter(|(s, _)| Some(*s) != leave)
            .map(|(s, _)| (s.to_owned(), true))
            .collect();
        if let Some(s) = join {
            holders.insert(s.to_owned(), true);
        }
        SemaphoreRecord { limit, holders }
    }

    /// The operations that write `record` over the one read, by check-and-set: a
    /// record without holders is deleted (the semaphore leaves nothing behind, and
    /// a lock of the same name takes its one-transaction path again).
    pub(crate) fn write_record(
        &self,
        keys: &SemaphoreKeys,
        record: &SemaphoreRecord,
    ) -> Vec<TxnOp> {
        if record.holders.is_empty() {
            if self.record_index == 0 {
                return Vec::new();
            }
            return vec![
                TxnOp::check_index(&keys.record, self.record_index),
                TxnOp::delete(&keys.record),
            ];
        }
        vec![TxnOp::cas(
            &keys.record,
            &record.to_bytes(),
            SEMAPHORE_FLAGS,
            self.record_index,
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(key: &str, session: Option<&str>, create: u64, value: Option<&[u8]>) -> KvEntry {
        let value = value.map(|v| {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD.encode(v)
        });
        serde_json::from_value(serde_json::json!({
            "Key": key, "Session": session, "CreateIndex": create,
            "ModifyIndex": create, "Value": value,
        }))
        .unwrap()
    }

    /// A listed session whose contender key is gone holds nothing, and is pruned
    /// from the next record; contenders without a slot queue by creation.
    #[test]
    fn dead_holders_are_pruned_and_waiters_queue_by_creation() {
        let keys = SemaphoreKeys::of("p/k");
        let record = br#"{"Limit":2,"Holders":{"a":true,"dead":true}}"#;
        let entries = vec![
            entry("p/k/.lock", None, 9, Some(record)),
            entry("p/k/a", Some("a"), 3, None),
            entry("p/k/w2", Some("w2"), 8, None),
            entry("p/k/w1", Some("w1"), 5, None),
            entry("p/k/unlocked", None, 4, None),
        ];
        let s = Snapshot::of(&keys, entries, 9).unwrap();
        assert_eq!(s.held(), 1);
        assert_eq!(s.limit_in_use(), Some(2));
        let waiters: Vec<&str> = s.waiters().iter().map(|(w, _)| *w).collect();
        assert_eq!(waiters, ["w1", "w2"]);
        let next = s.record_after(2, Some("w1"), None);
        assert_eq!(next.holders.keys().collect::<Vec<_>>(), ["a", "w1"]);
        assert!(s.record_after(2, None, Some("a")).holders.is_empty());
    }
}
