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

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use etcd_client::{Client, Compare, CompareOp, Txn, TxnOp};
use tokio::sync::Notify;
use tokio::time::{Instant, sleep_until};

use super::error::within;
use super::lease::Lease;

/// The longest a delete may take before it is retried.
const DELETE_LIMIT: Duration = Duration::from_secs(2);
/// How long after a failed delete it is tried again.
const RETRY: Duration = Duration::from_millis(500);

/// One granted hold.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    /// The create_revision of its key: the fencing token.
    pub(crate) rev: i64,
    /// The lease its key is attached to.
    pub(crate) lease: Arc<Lease>,
    /// When it ends unless extended.
    pub(crate) deadline: Instant,
}

/// A key to delete if its create_revision is still `rev`.
#[derive(Debug)]
struct Doomed {
    name: String,
    rev: i64,
    at: Instant,
}

/// The holds, by etcd key.
#[derive(Debug, Default)]
pub(crate) struct Holds {
    map: Mutex<HashMap<String, Record>>,
    doomed: Mutex<Vec<Doomed>>,
    wake: Notify,
}

impl Holds {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Record>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records (or refreshes) a hold.
    pub(crate) fn insert(&self, name: String, record: Record) {
        self.map().insert(name, record);
        self.wake.notify_one();
    }

    /// The hold on `name`, if any.
    pub(crate) fn get(&self, name: &str) -> Option<Record> {
        self.map().get(name).cloned()
    }

    /// Forgets the hold on `name`, returning it.
    pub(crate) fn remove(&self, name: &str) -> Option<Record> {
        self.map().remove(name)
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
        self.doomed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|d| d.name != name);
    }

    /// Deletes `name` at `rev` in the background, retrying until it is done.
    pub(crate) fn delete_later(&self, name: String, rev: i64) {
        self.doomed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Doomed {
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
        let mut doomed = self.doomed.lock().unwrap_or_else(|e| e.into_inner());
        let (ready, later): (Vec<Doomed>, Vec<Doomed>) =
            doomed.drain(..).partition(|d| d.at <= now);
        *doomed = later;
        out.extend(ready);
        out
    }

    /// When the next thing is due.
    fn next_due(&self) -> Option<Instant> {
        let first = self.map().values().map(|r| r.deadline).min();
        let doomed = self.doomed.lock().unwrap_or_else(|e| e.into_inner());
        let retry = doomed.iter().map(|d| d.at).min();
        first.into_iter().chain(retry).min()
    }
}

/// Deletes `name` if its create_revision is `rev`. True when the request was
/// answered (deleted, or already gone).
pub(crate) async fn delete_if(client: &Client, name: &str, rev: i64) -> bool {
    let txn = Txn::new()
        .when([Compare::create_revision(name, CompareOp::Equal, rev)])
        .and_then([TxnOp::delete(name, None)]);
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
                let mut doomed = holds.doomed.lock().unwrap_or_else(|e| e.into_inner());
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
