//! Semaphores over the key's queue. Behind permits only, the first `limit` entries
//! (by create_revision) hold; a permit waits for any lock or reader entry before it,
//! and a permit with another limit is a `Config` error. No herd:
//!
//! - the first waiter after the holders watches the queue for any delete (a holder
//!   going lets it in);
//! - each later waiter watches the entry just before it, for its delete or a put;
//! - a waiter granted after waiting rewrites its entry (same value, same lease),
//!   which wakes the next waiter to take its place as the first.

use std::sync::Arc;

use etcd_client::{Compare, CompareOp, GetOptions, KeyValue, PutOptions, SortOrder, SortTarget};
use etcd_client::{Txn, TxnOp};
use lockkit_core::{LockMode, Result};

use super::connection::Inner;
use super::keys;
use super::queue::Verdict;
use super::request::within;
use super::turn::Watch;

/// Whether our permit (created at `rev`, of `limit`) holds, given the first
/// `limit` entries of the queue by create_revision.
pub(crate) fn verdict(limit: u32, rev: i64, first: &[KeyValue]) -> Verdict {
    for kv in first {
        match keys::mode_of(kv.key(), kv.value()) {
            LockMode::Permit { limit: theirs } if theirs != limit => {
                return Verdict::Mismatch(theirs);
            }
            LockMode::Permit { .. } if kv.create_revision() == rev => return Verdict::Holds,
            LockMode::Permit { .. } => {}
            _ => return Verdict::Waits,
        }
    }
    Verdict::Waits
}

/// What our permit, created at `rev`, waits for: the last entry before it that is
/// not a permit; else, if `limit` permits are before it, the queue (we are the
/// first waiter); else the entry just before it. `None` if nothing is ahead.
pub(crate) async fn wait_target(
    inner: &Inner,
    queue: &str,
    rev: i64,
    limit: u32,
) -> Result<Option<Watch>> {
    let opts = GetOptions::new()
        .with_prefix()
        .with_max_create_revision(rev - 1)
        .with_sort(SortTarget::Create, SortOrder::Ascend)
        .with_keys_only();
    let mut kv = inner.client.kv_client();
    let resp = within(
        inner.timeouts.request,
        "read queue",
        kv.get(queue, Some(opts)),
    )
    .await?;
    let at = resp.header().map_or(0, |h| h.revision());
    let earlier = resp.kvs();
    let is_permit = |kv: &KeyValue| keys::mode_of(kv.key(), b"").limit().is_some();
    if let Some(other) = earlier.iter().rev().find(|kv| !is_permit(kv)) {
        return Ok(Some(Watch::delete_of(other.key().to_vec(), at)));
    }
    Ok(match earlier.len() {
        n if n < limit as usize => None,
        n if n == limit as usize => Some(Watch::any_delete_in(queue, at)),
        _ => earlier
            .last()
            .map(|kv| Watch::change_of(kv.key().to_vec(), at)),
    })
}

/// Passes the turn on after a permit was granted to a waiter: rewrites its entry
/// `(name, mod_revision as read at the grant)` as it is, waking the next waiter.
/// Sent in the background, it costs the grant no round trip; the mod_revision
/// guard keeps it from undoing a later change (an extend moving the entry to
/// another lease).
pub(crate) fn pass_turn(
    inner: &Arc<Inner>,
    (name, modified): (String, i64),
    value: String,
    lease: i64,
) {
    let inner = inner.clone();
    tokio::spawn(async move {
        let txn = Txn::new()
            .when([Compare::mod_revision(
                name.as_str(),
                CompareOp::Equal,
                modified,
            )])
            .and_then([TxnOp::put(
                name.as_str(),
                value,
                Some(PutOptions::new().with_lease(lease)),
            )]);
        let mut kv = inner.client.kv_client();
        // Best effort: a waiter that misses it looks again after a TTL.
        let _ = within(inner.timeouts.request, "pass the turn", kv.txn(txn)).await;
    });
}
