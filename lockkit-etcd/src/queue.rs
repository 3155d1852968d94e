//! Acquire: the revision-ordered queue of etcd's concurrency mutex, which readers
//! share (as etcd's `contrib/recipes` read-write lock).
//!
//! 1. One txn puts our entry with our lease (creating it if its create_revision
//!    is 0, else refreshing its lease), and reads our entry and the first entry we
//!    wait behind (smallest create_revision): for a writer, the queue's; for a
//!    reader, the first writer's.
//! 2. A writer that is first, or a reader with no writer before it, holds; the
//!    token is our create_revision.
//! 3. Otherwise we watch only our predecessor for its deletion, from the revision
//!    we read it at, so a delete in between is not missed: a writer the entry just
//!    before it, a reader the last writer before it. One release wakes the next
//!    writer, or the readers behind a writer: no herd.
//! 4. On waking we confirm our lease *before* reading the queue again, so we
//!    never report a grant on an expired lease (etcd issue 11456; invariant E3):
//!    by a keep-alive round answered since a third of the TTL ago (most often the
//!    lease keeper's latest, so no request), or else by a round of our own. The
//!    deadline counts from that round, so at least 2/3 of the TTL is left.

use std::sync::Arc;
use std::time::Duration;

use etcd_client::{
    Compare, CompareOp, GetOptions, KeyValue, PutOptions, SortOrder, SortTarget, Txn, TxnOp,
    TxnOpResponse,
};
use lockkit_core::{AcquireRequest, FencingToken, Grant, LockError, LockMode, Result};
use tokio::time::Instant;

use super::connection::Inner;
use super::error::{backend, connection, etcd_error, is_lease_not_found};
use super::holds::Record;
use super::keys;
use super::lease::Lease;
use super::permit;
use super::request::within;

/// Our entry after the enqueue txn.
pub(crate) struct Entry {
    pub(crate) rev: i64,
    pub(crate) created: bool,
    /// Whether it holds.
    pub(crate) verdict: Verdict,
}

/// Whether an entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Holds,
    Waits,
    /// A permit, where permits of this other limit are held or queued ahead.
    Mismatch(u32),
}

/// How a wait ended.
pub(crate) enum Turn {
    /// Until when, and our entry's mod_revision as read.
    Granted(Instant, i64),
    /// Our entry or lease is gone: enqueue again.
    Requeue,
    /// A permit whose limit differs from the holders'.
    Mismatch(u32),
}

/// The entries an entry of `mode` waits behind: all of the queue for a writer,
/// the writers' for a reader.
pub(crate) fn ahead(queue: &str, mode: LockMode) -> GetOptions {
    if mode == LockMode::Shared {
        GetOptions::new().with_range(keys::writers_end(queue))
    } else {
        GetOptions::new().with_prefix()
    }
}

/// The first (smallest create_revision) of the entries `mode` waits behind; for a
/// permit of `limit`, the first `limit` of the queue, with their values.
fn first_of(queue: &str, mode: LockMode) -> TxnOp {
    let first = ahead(queue, mode).with_sort(SortTarget::Create, SortOrder::Ascend);
    let opts = match mode.limit() {
        Some(limit) => first.with_limit(i64::from(limit)),
        None => first.with_limit(1).with_keys_only(),
    };
    TxnOp::get(queue, Some(opts))
}

/// The entries that hold, of a queue read in create order (with values): the
/// first if it is a writer's, else the readers before the first writer, or the
/// first `limit` of the permits before anything else.
pub(crate) fn holding(kvs: &[KeyValue]) -> &[KeyValue] {
    let Some(first) = kvs.first() else {
        return &[];
    };
    let mode = |kv: &KeyValue| keys::mode_of(kv.key(), kv.value());
    let run = |same: fn(LockMode) -> bool| kvs.iter().take_while(|kv| same(mode(kv))).count();
    match mode(first) {
        LockMode::Shared => &kvs[..run(|m| m == LockMode::Shared)],
        LockMode::Permit { limit } => &kvs[..run(|m| m.limit().is_some()).min(limit as usize)],
        _ => &kvs[..1],
    }
}

/// Whether our entry, created at `rev`, holds, given [`first_of`]'s answer: a
/// writer must be first, a reader must have no writer before it, a permit must be
/// among the first `limit` behind permits only ([`permit::verdict`]).
fn verdict(mode: LockMode, rev: i64, first: &[KeyValue]) -> Verdict {
    let first_rev = first.first().map(KeyValue::create_revision);
    let holds = match mode {
        LockMode::Permit { limit } => return permit::verdict(limit, rev, first),
        LockMode::Shared => first_rev.is_none_or(|f| f > rev),
        _ => first_rev == Some(rev),
    };
    if holds {
        Verdict::Holds
    } else {
        Verdict::Waits
    }
}

fn kvs(op: Option<&TxnOpResponse>) -> &[KeyValue] {
    match op {
        Some(TxnOpResponse::Get(g)) => g.kvs(),
        _ => &[],
    }
}

fn create_rev(op: Option<&TxnOpResponse>) -> Option<i64> {
    kvs(op).first().map(KeyValue::create_revision)
}

/// Gets a confirmed lease for the request's TTL and enqueues on it; returns
/// the entry, the lease, and when the enqueue was sent.
pub(crate) async fn enqueue_once(
    inner: &Inner,
    name: &str,
    queue: &str,
    mode: LockMode,
    req: &AcquireRequest,
) -> std::result::Result<(Entry, Arc<Lease>, Instant), EnqueueError> {
    let lease = inner
        .confirmed_lease(req.ttl)
        .await
        .map_err(EnqueueError::Other)?
        .ok_or(EnqueueError::LeaseGone)?;
    let sent = Instant::now();
    match enqueue(inner, name, queue, mode, &lease, req).await {
        Ok(entry) => Ok((entry, lease, sent)),
        Err(EnqueueError::LeaseGone) => {
            inner.leases.forget(&lease);
            Err(EnqueueError::LeaseGone)
        }
        Err(e) => Err(e),
    }
}

/// Records the hold on `name`, an entry of `mode` (which has its key watched),
/// and makes its grant.
pub(crate) fn granted(
    inner: &Inner,
    req: &AcquireRequest,
    (name, mode): (String, LockMode),
    rev: i64,
    lease: Arc<Lease>,
    deadline: Instant,
) -> Grant {
    inner.holds.keep(&name);
    let effective = lease.ttl.max(req.ttl);
    inner
        .holds
        .insert(name, Record::new(rev, mode, lease, deadline));
    let grant = Grant::of(req, FencingToken(u64::try_from(rev).unwrap_or(0)), deadline);
    if effective == req.ttl {
        grant
    } else {
        // The lease is whole seconds, and etcd raises it to 1.5 × its election
        // timeout: a holder that dies keeps the lock that long (invariant E4).
        grant.with_effective_ttl(effective)
    }
}

/// One txn: put our entry with `lease` (create or refresh), read it and the
/// first entry an entry of `mode` waits behind.
async fn enqueue(
    inner: &Inner,
    name: &str,
    queue: &str,
    mode: LockMode,
    lease: &Lease,
    req: &AcquireRequest,
) -> std::result::Result<Entry, EnqueueError> {
    let value = keys::value(mode, &req.stored_label().unwrap_or_default());
    let ops = || {
        [
            TxnOp::put(
                name,
                value.clone(),
                Some(PutOptions::new().with_lease(lease.id)),
            ),
            TxnOp::get(name, None),
            first_of(queue, mode),
        ]
    };
    let txn = Txn::new()
        .when([Compare::create_revision(name, CompareOp::Equal, 0)])
        .and_then(ops())
        .or_else(ops());
    let mut kv = inner.client.kv_client();
    let resp = match tokio::time::timeout(inner.timeouts.request, kv.txn(txn)).await {
        Ok(Ok(resp)) => resp,
        Ok(Err(e)) if is_lease_not_found(&e) => return Err(EnqueueError::LeaseGone),
        Ok(Err(e)) => return Err(EnqueueError::Other(etcd_error(e))),
        Err(_) => {
            return Err(EnqueueError::Other(connection(format!(
                "enqueue: no answer from etcd within {} (request_timeout_ms)",
                lockkit_core::human_duration(inner.timeouts.request)
            ))));
        }
    };
    let ops = resp.op_responses();
    let rev = create_rev(ops.get(1))
        .ok_or_else(|| EnqueueError::Other(backend("the enqueue txn did not return our entry")))?;
    Ok(Entry {
        rev,
        created: resp.succeeded(),
        verdict: verdict(mode, rev, kvs(ops.get(2))),
    })
}

/// Confirms our lease, then reads the queue: `Some(Granted)` if our entry, of
/// `mode`, holds; `Some(Requeue)` if it is gone; `None` if someone is still ahead
/// (invariants E1, E3).
pub(crate) async fn check_turn(
    inner: &Inner,
    name: &str,
    queue: &str,
    (rev, mode): (i64, LockMode),
    lease: &Lease,
    ttl: Duration,
) -> Result<Option<Turn>> {
    // A round from the last third of the TTL leaves 2/3 of it, as for a new
    // entry ([`enqueue_once`]).
    let since = Instant::now()
        .checked_sub(ttl / 3)
        .unwrap_or_else(Instant::now);
    match inner.confirm(lease, since).await {
        Ok(_) => {}
        Err(e) if e.is_lost() => {
            inner.leases.forget(lease);
            return Ok(Some(Turn::Requeue));
        }
        Err(e) => return Err(e),
    }
    let sent = Instant::now();
    let mut kv = inner.client.kv_client();
    let txn = Txn::new().and_then([TxnOp::get(name, None), first_of(queue, mode)]);
    let resp = within(inner.timeouts.request, "read queue", kv.txn(txn)).await?;
    let ops = resp.op_responses();
    if create_rev(ops.first()) != Some(rev) {
        return Ok(Some(Turn::Requeue));
    }
    let modified = kvs(ops.first()).first().map_or(0, KeyValue::mod_revision);
    let first = kvs(ops.get(1));
    match verdict(mode, rev, first) {
        Verdict::Holds => Ok(Some(Turn::Granted(
            (sent + ttl).min(lease.alive_until()),
            modified,
        ))),
        Verdict::Mismatch(theirs) => Ok(Some(Turn::Mismatch(theirs))),
        Verdict::Waits if first.first().is_some_and(|kv| kv.create_revision() < rev) => Ok(None),
        // A writer whose own entry is not in the queue's order: read it again.
        Verdict::Waits => Ok(Some(Turn::Requeue)),
    }
}

/// Why an enqueue failed.
pub(crate) enum EnqueueError {
    /// The server no longer has the lease.
    LeaseGone,
    Other(LockError),
}
