//! Inspection: the key's queue, read in one request. Its first entry holds the
//! lock (its create revision is the token, its value the owner's label, its lease
//! says how long it has left); the rest wait.

use std::time::Duration;

use etcd_client::{GetOptions, SortOrder, SortTarget};
use lockkit_core::driver::{Holder, Inspection};
use lockkit_core::{FencingToken, LockKey, LockMode, Result};

use super::connection::Inner;
use super::keys;
use super::request::within;

/// The holder and waiters of `key`.
pub(crate) async fn inspect(inner: &Inner, key: &LockKey) -> Result<Inspection> {
    let queue = keys::queue(&inner.prefix, key);
    let opts = GetOptions::new()
        .with_prefix()
        .with_sort(SortTarget::Create, SortOrder::Ascend);
    let mut kv = inner.client.kv_client();
    let resp = within(
        inner.timeouts.request,
        "read queue",
        kv.get(queue, Some(opts)),
    )
    .await?;
    let Some(first) = resp.kvs().first() else {
        return Ok(Inspection::free(key.clone()).with_waiters(0));
    };
    let mut holder = Holder::new(
        LockMode::Exclusive,
        FencingToken(u64::try_from(first.create_revision()).unwrap_or(0)),
    )
    .with_label(
        first
            .value_str()
            .ok()
            .filter(|l| !l.is_empty())
            .map(str::to_string),
    );
    let mut leases = inner.client.lease_client();
    let left = within(
        inner.timeouts.request,
        "read lease",
        leases.time_to_live(first.lease(), None),
    )
    .await?;
    // Whole seconds, as etcd counts; -1 once the lease is gone.
    if let Ok(secs) = u64::try_from(left.ttl()) {
        holder = holder.with_remaining(Duration::from_secs(secs));
    }
    let holders = if left.ttl() < 0 {
        Vec::new()
    } else {
        vec![holder]
    };
    Ok(Inspection::free(key.clone())
        .with_holders(holders)
        .with_waiters(resp.kvs().len() - 1))
}
