//! The holds this driver granted, and the sweeper that ends them on time.
//!
//! etcd leases have whole-second TTLs, and the server revokes expired leases in
//! sweeps about 500 ms apart; and one lease is shared by every hold of the same
//! TTL. So a hold is not left to its lease alone: the sweeper deletes each hold's
//! key (compare-and-delete on its create_revision) as soon as its deadline passes
//! without an extend. The lease stays the backstop for a holder that died.
//!
//! The sweeper also retries deletes that failed (a cancelled waiter's queue entry,
//! say), so an entry on a lease that other holds keep alive cannot linger.
//!
//! Every hold recorded here is watched (see [`super::watch`]): recording one asks
//! the watch task for a watch on its key, forgetting one cancels it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use etcd_client::{Client, Compare, CompareOp, Txn, TxnOp};
use lockkit_core::sync::lock;
use lockkit_core::{LockKey, LockMode, OwnerId};
use tokio::sync::{Notify, mpsc};
use tokio::time::{Instant, sleep_until};

use super::keys;
use super::lease::Lease;
use super::request::within;
use super::watch::Cmd;

/// The longest a delete may take before it is retried.
const DELETE_LIMIT: Duration = Duration::from_secs(2);
/// How long after a failed delete it is tried again.
const RETRY: Duration = Duration::from_millis(500);

/// One granted hold.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    /// The create_revision of its key: the fencing token (invariant E2).
    pub(crate) rev: i64,
    /// The lease its key is attached to.
    pub(crate) lease: Arc<Lease>,
    /// The mode its entry holds in.
    pub(crate) mode: LockMode,
    /// When it ends unless extended.
    pub(crate) deadline: Instant,
    /// The watch stream generation that acknowledged this hold's watch.
    pub(crate) watched: Option<u64>,
    /// The watch saw its key deleted.
    pub(crate) gone: bool,
}

impl Record {
    /// A new hold in `mode`, not yet watched.
    pub(crate) fn new(rev: i64, mode: LockMode, lease: Arc<Lease>, deadline: Instant) -> Self {
        Self {
            rev,
            mode,
            lease,
            deadline,
            watched: None,
            gone: false,
        }
    }
}

/// A key to delete if its create_revision is still `rev`.
#[derive(Debug)]
struct Doomed {
    name: String,
    rev: i64,
    at: Instant,
}

/// The holds, by etcd key.
#[derive(Debug)]
pub(crate) struct Holds {
    map: Mutex<HashMap<String, Record>>,
    doomed: Mutex<Vec<Doomed>>,
    wake: Notify,
    watch: mpsc::UnboundedSender<Cmd>,
}

impl Holds {
    /// Holds whose watches go to the watch task behind `watch`.
    pub(crate) fn new(watch: mpsc::UnboundedSender<Cmd>) -> Self {
        Self {
            map: Mutex::default(),
            doomed: Mutex::default(),
            wake: Notify::new(),
            watch,
        }
    }

    fn unwatch(&self, name: &str, rev: i64) {
        // The task outlives every sender but the driver's; a closed channel means
        // the driver is going away.
        let _ = self.watch.send(Cmd::Unwatch {
            name: name.to_string(),
            rev,
        });
    }

    /// The channel to the watch task.
    pub(crate) fn watch_commands(&self) -> &mpsc::UnboundedSender<Cmd> {
        &self.watch
    }

    /// The watch of the hold on `name` at `rev` was acknowledged on stream
    /// `generation` (`None`: etcd cancelled it).
    pub(crate) fn watched(&self, name: &str, rev: i64, generation: Option<u64>) {
        if let Some(r) = self.map().get_mut(name).filter(|r| r.rev == rev) {
            r.watched = generation;
        }
    }

    /// The key of the hold on `name` at `rev` was deleted.
    pub(crate) fn vanished(&self, name: &str, rev: i64) {
        if let Some(r) = self.map().get_mut(name).filter(|r| r.rev == rev) {
            r.gone = true;
        }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Record>> {
        lock(&self.map)
    }

    /// Records (or refreshes) a hold, and has its key watched.
    pub(crate) fn insert(&self, name: String, mut record: Record) {
        let mut map = self.map();
        let watch = match map.get(&name) {
            // The same hold again (a repeated acquire): its watch stands.
            Some(old) if old.rev == record.rev => {
                record.watched = old.watched;
                record.gone = old.gone;
                false
            }
            Some(old) => {
                self.unwatch(&name, old.rev);
                true
            }
            None => true,
        };
        if watch {
            let _ = self.watch.send(Cmd::Watch {
                name: name.clone(),
                rev: record.rev,
            });
        }
        map.insert(name, record);
        drop(map);
        self.wake.notify_one();
    }

    /// The entry by which `owner` holds `key`: its reader's or permit's entry if
    /// this driver holds that, else its writer entry (an owner holds a key in one
    /// mode only: a read under its write hold re-enters the write hold).
    pub(crate) fn entry_of(&self, prefix: &str, key: &LockKey, owner: &OwnerId) -> String {
        let map = self.map();
        [LockMode::Shared, LockMode::Permit { limit: 1 }]
            .map(|m| keys::entry(prefix, key, owner, m))
            .into_iter()
            .find(|name| map.contains_key(name))
            .unwrap_or_else(|| keys::entry(prefix, key, owner, LockMode::Exclusive))
    }

    /// The hold on `name`, if any.
    pub(crate) fn get(&self, name: &str) -> Option<Record> {
        self.map().get(name).cloned()
    }

    /// Forgets the hold on `name` (and cancels its watch), returning it.
    pub(crate) fn remove(&self, name: &str) -> Option<Record> {
        let old = self.map().remove(name);
        if let Some(r) = &old {
            self.unwatch(name, r.rev);
        }
        old
    }

    /// Moves the hold on `name` (still at `rev`) to `lease` and `deadline`. False
    /// when the hold is gone (released, swept, or re-created): then the caller must
    /// not report it renewed.
    pub(crate) fn renewed(
        &self,
        name: &str,
        rev: i64,
        lease: &Arc<Lease>,
        deadline: Instant,
    ) -> bool {
        match self.map().get_mut(name) {
            Some(r) if r.rev == rev => {
                r.lease = lease.clone();
                r.deadline = deadline;
                true
            }
            _ => false,
        }
    }

    /// Cancels pending background deletes of `name` (it is held again).
    pub(crate) fn keep(&self, name: &str) {
        lock(&self.doomed).retain(|d| d.name != name);
    }

    /// Deletes `name` at `rev` in the background, retrying until it is done.
    pub(crate) fn delete_later(&self, name: String, rev: i64) {
        lock(&self.doomed).push(Doomed {
            name,
            rev,
            at: Instant::now(),
        });
        self.wake.notify_one();
    }

    /// Takes what is due now.
    fn take_due(&self, now: Instant) -> Vec<Doomed> {
        let mut out = Vec::new();
        self.map().retain(|name, r| {
            let keep = r.deadline > now;
            if !keep {
                out.push(Doomed {
                    name: name.clone(),
                    rev: r.rev,
                    at: now,
                });
            }
            keep
        });
        for d in &out {
            self.unwatch(&d.name, d.rev);
        }
        let mut doomed = lock(&self.doomed);
        let (ready, later): (Vec<Doomed>, Vec<Doomed>) =
            doomed.drain(..).partition(|d| d.at <= now);
        *doomed = later;
        out.extend(ready);
        out
    }

    /// When the next thing is due.
    fn next_due(&self) -> Option<Instant> {
        let first = self.map().values().map(|r| r.deadline).min();
        let doomed = lock(&self.doomed);
        let retry = doomed.iter().map(|d| d.at).min();
        first.into_iter().chain(retry).min()
    }
}

/// The txn that deletes `name` if its create_revision is still `rev`: a release
/// or expiry never deletes another owner's entry.
pub(crate) fn compare_and_delete(name: &[u8], rev: i64) -> Txn {
    Txn::new()
        .when([Compare::create_revision(name, CompareOp::Equal, rev)])
        .and_then([TxnOp::delete(name, None)])
}

/// Deletes `name` if its create_revision is `rev`. True when the request was
/// answered (deleted, or already gone).
pub(crate) async fn delete_if(client: &Client, name: &str, rev: i64) -> bool {
    let txn = compare_and_delete(name.as_bytes(), rev);
    let mut kv = client.kv_client();
    match within(DELETE_LIMIT, "delete", kv.txn(txn)).await {
        Ok(_) => true,
        Err(e) => {
            tracing::debug!(error = %e, "delete failed; will retry");
            false
        }
    }
}

/// Runs until the driver is dropped (which aborts it).
pub(crate) async fn sweep(holds: Arc<Holds>, client: Client) {
    loop {
        for d in holds.take_due(Instant::now()) {
            tracing::debug!(key = %d.name, "deleting an expired hold or abandoned entry");
            if !delete_if(&client, &d.name, d.rev).await {
                let mut doomed = lock(&holds.doomed);
                doomed.push(Doomed {
                    at: Instant::now() + RETRY,
                    ..d
                });
            }
        }
        match holds.next_due() {
            Some(at) => {
                tokio::select! {
                    _ = sleep_until(at) => {}
                    _ = holds.wake.notified() => {}
                }
            }
            None => holds.wake.notified().await,
        }
    }
}
