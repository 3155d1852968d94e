//! Inspection: the key's queue, read in one request. Its first entry holds the
//! lock, or, if it is a reader's, the readers before the first writer share it, or
//! the first permits hold (each one's create revision is its token, its value the
//! owner's label, its lease says how long it has left); the rest wait.

use std::collections::HashMap;
use std::time::Duration;

use etcd_client::{GetOptions, SortOrder, SortTarget};
use lockkit_core::driver::{Holder, Inspection};
use lockkit_core::{FencingToken, LockKey, Result};

use super::connection::Inner;
use super::keys;
use super::queue::holding;
use super::request::within;

/// The holders and waiters of `key`.
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
    let held = holding(resp.kvs());
    // Whole seconds left on each lease, as etcd counts; -1 once it is gone. Holds
    // of one driver share a lease: each is asked for once.
    let mut left: HashMap<i64, i64> = HashMap::new();
    let mut leases = inner.client.lease_client();
    let mut holders = Vec::new();
    for kv in held {
        let ttl = match left.get(&kv.lease()) {
            Some(ttl) => *ttl,
            None => {
                let answer = within(
                    inner.timeouts.request,
                    "read lease",
                    leases.time_to_live(kv.lease(), None),
                )
                .await?;
                left.insert(kv.lease(), answer.ttl());
                answer.ttl()
            }
        };
        let Ok(secs) = u64::try_from(ttl) else {
            continue;
        };
        let mode = keys::mode_of(kv.key(), kv.value());
        let label = keys::label_of(kv.key(), kv.value());
        holders.push(
            Holder::new(
                mode,
                FencingToken(u64::try_from(kv.create_revision()).unwrap_or(0)),
            )
            .with_label(label)
            .with_remaining(Duration::from_secs(secs)),
        );
    }
    Ok(Inspection::free(key.clone())
        .with_holders(holders)
        .with_waiters(resp.kvs().len() - held.len()))
}
