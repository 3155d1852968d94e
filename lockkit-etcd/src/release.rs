//! Leaving the queue: `release` (our entry), `force_release` (the holders'
//! entries, whoever they are) and `purge` (every entry). Each deletes by compare-and-delete on
//! create_revision, or by our owner's own key, so it never deletes another owner's
//! entry by mistake (invariant E1), and retries transient errors for [`PATIENCE`].

use std::time::Duration;

use etcd_client::{DeleteOptions, GetOptions, SortOrder, SortTarget, Txn, TxnOp};
use lockkit_core::{LockKey, LockMode, OwnerId, Result};

use super::connection::Inner;
use super::holds::compare_and_delete;
use super::keys;
use super::queue::holding;
use super::request::{with_patience, within};

/// How long release and force_release retry transient errors.
const PATIENCE: Duration = Duration::from_millis(750);

/// Releases `owner`'s hold on `key`: true if its entry was deleted. A delete
/// that keeps failing is left to the sweeper (the caller still learns it failed).
pub(crate) async fn release(inner: &Inner, key: &LockKey, owner: &OwnerId) -> Result<bool> {
    let name = inner.holds.entry_of(&inner.prefix, key, owner);
    let Some(record) = inner.holds.remove(&name) else {
        // Our owner's entries by name, as a writer and as a reader: never another
        // owner's.
        let [writer, reader] = [LockMode::Exclusive, LockMode::Shared]
            .map(|m| keys::entry(&inner.prefix, key, owner, m));
        let resp = with_patience(PATIENCE, || async {
            let txn = Txn::new().and_then([
                TxnOp::delete(writer.as_str(), None),
                TxnOp::delete(reader.as_str(), None),
            ]);
            let mut kv = inner.client.kv_client();
            within(inner.timeouts.request, "release", kv.txn(txn)).await
        })
        .await?;
        let deleted = resp
            .op_responses()
            .iter()
            .any(|op| matches!(op, etcd_client::TxnOpResponse::Delete(d) if d.deleted() > 0));
        return Ok(deleted);
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

/// Deletes the entries of `key`'s current holders (a writer, the readers before
/// the first writer, or the permits that hold): true if there was one.
pub(crate) async fn force_release(inner: &Inner, key: &LockKey) -> Result<bool> {
    let queue = keys::queue(&inner.prefix, key);
    with_patience(PATIENCE, || async {
        let mut kv = inner.client.kv_client();
        // With values: a permit's limit is in its value.
        let opts = GetOptions::new()
            .with_prefix()
            .with_sort(SortTarget::Create, SortOrder::Ascend);
        let resp = within(
            inner.timeouts.request,
            "force release",
            kv.get(queue.as_str(), Some(opts)),
        )
        .await?;
        let mut released = false;
        for holder in holding(resp.kvs()) {
            let txn = compare_and_delete(holder.key(), holder.create_revision());
            let resp = within(inner.timeouts.request, "force release", kv.txn(txn)).await?;
            released |= resp.succeeded();
        }
        Ok(released)
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
