//! Leaving the queue: `release` (our entry), `force_release` (the holder's entry,
//! whoever it is) and `purge` (every entry). Each deletes by compare-and-delete on
//! create_revision, or by our owner's own key, so it never deletes another owner's
//! entry by mistake, and retries transient errors for [`PATIENCE`].

use std::time::Duration;

use etcd_client::{DeleteOptions, GetOptions, SortOrder, SortTarget};
use lockkit_core::{LockKey, OwnerId, Result};

use super::connection::Inner;
use super::holds::compare_and_delete;
use super::keys;
use super::request::{with_patience, within};

/// How long release and force_release retry transient errors.
const PATIENCE: Duration = Duration::from_millis(750);

/// Releases `owner`'s hold on `key`: true if its entry was deleted. A delete
/// that keeps failing is left to the sweeper (the caller still learns it failed).
pub(crate) async fn release(inner: &Inner, key: &LockKey, owner: &OwnerId) -> Result<bool> {
    let name = keys::entry(&inner.prefix, key, owner);
    let Some(record) = inner.holds.remove(&name) else {
        // Our owner's entry by name: never another owner's.
        let resp = with_patience(PATIENCE, || async {
            let mut kv = inner.client.kv_client();
            within(
                inner.timeouts.request,
                "release",
                kv.delete(name.as_str(), None),
            )
            .await
        })
        .await?;
        return Ok(resp.deleted() > 0);
    };
    let released = with_patience(PATIENCE, || async {
        let txn = compare_and_delete(name.as_bytes(), record.rev);
        let mut kv = inner.client.kv_client();
        within(inner.timeouts.request, "release", kv.txn(txn)).await
    })
    .await;
    match released {
        Ok(resp) => Ok(resp.succeeded()),
        Err(e) => {
            // Keep trying in the background; the caller learns it failed.
            inner.holds.delete_later(name, record.rev);
            Err(e)
        }
    }
}

/// Deletes the entry of `key`'s current holder: true if there was one.
pub(crate) async fn force_release(inner: &Inner, key: &LockKey) -> Result<bool> {
    let queue = keys::queue(&inner.prefix, key);
    with_patience(PATIENCE, || async {
        let mut kv = inner.client.kv_client();
        let opts = GetOptions::new()
            .with_prefix()
            .with_sort(SortTarget::Create, SortOrder::Ascend)
            .with_limit(1)
            .with_keys_only();
        let resp = within(
            inner.timeouts.request,
            "force release",
            kv.get(queue.as_str(), Some(opts)),
        )
        .await?;
        let Some(first) = resp.kvs().first() else {
            return Ok(false);
        };
        let txn = compare_and_delete(first.key(), first.create_revision());
        let resp = within(inner.timeouts.request, "force release", kv.txn(txn)).await?;
        Ok(resp.succeeded())
    })
    .await
}

/// Deletes every entry of `key`'s queue.
pub(crate) async fn purge(inner: &Inner, key: &LockKey) -> Result<()> {
    let queue = keys::queue(&inner.prefix, key);
    with_patience(PATIENCE, || async {
        let mut kv = inner.client.kv_client();
        let opts = DeleteOptions::new().with_prefix();
        within(
            inner.timeouts.request,
            "purge",
            kv.delete(queue.as_str(), Some(opts)),
        )
        .await
        .map(|_| ())
    })
    .await
}
