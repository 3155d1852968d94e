//! Several free keys in one txn ([`lockkit_core::LockDriver::try_acquire_all`]):
//! if every key's queue is empty, put our entry in each, on one lease. Every
//! entry is then first in its queue, so each holds, and its token is the txn's
//! revision, which created them all. A queue with any entry, holder or waiter,
//! fails the whole txn, and nothing is written: then `lock_all` queues for the
//! keys one by one.

use std::sync::Arc;

use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
use lockkit_core::{AcquireRequest, Grant, LockMode, Result};
use tokio::time::Instant;

use super::connection::Inner;
use super::error::{backend, connection, etcd_error, is_lease_not_found};
use super::{keys, queue};

/// Exclusive holds of every key of `reqs` (one owner, TTL and label), or none
/// if any key has an entry in its queue.
pub(crate) async fn take_all(
    inner: &Arc<Inner>,
    reqs: &[AcquireRequest],
) -> Result<Option<Vec<Grant>>> {
    let Some(first) = reqs.first() else {
        return Ok(Some(Vec::new()));
    };
    let Some(lease) = inner.confirmed_lease(first.ttl).await? else {
        return Ok(None);
    };
    let mode = LockMode::Exclusive;
    let names: Vec<String> = reqs
        .iter()
        .map(|req| keys::entry(&inner.prefix, &req.key, &req.owner, mode))
        .collect();
    let empty = reqs.iter().map(|req| {
        Compare::create_revision(keys::queue(&inner.prefix, &req.key), CompareOp::Equal, 0)
            .with_prefix()
    });
    let value = keys::value(mode, &first.stored_label().unwrap_or_default());
    let puts = names.iter().map(|name| {
        let on_lease = PutOptions::new().with_lease(lease.id);
        TxnOp::put(name.as_str(), value.clone(), Some(on_lease))
    });
    let txn = Txn::new()
        .when(empty.collect::<Vec<_>>())
        .and_then(puts.collect::<Vec<_>>());
    let sent = Instant::now();
    let mut kv = inner.client.kv_client();
    let resp = match tokio::time::timeout(inner.timeouts.request, kv.txn(txn)).await {
        Ok(Ok(resp)) => resp,
        Ok(Err(e)) if is_lease_not_found(&e) => {
            inner.leases.forget(&lease);
            return Ok(None);
        }
        Ok(Err(e)) => return Err(etcd_error(e)),
        Err(_) => {
            return Err(connection(format!(
                "take several keys: no answer from etcd within {} (request_timeout_ms)",
                lockkit_core::human_duration(inner.timeouts.request)
            )));
        }
    };
    if !resp.succeeded() {
        return Ok(None);
    }
    let rev = resp
        .header()
        .map(|h| h.revision())
        .ok_or_else(|| backend("the txn that took several keys had no header"))?;
    let deadline = (sent + first.ttl).min(lease.alive_until());
    let grants = reqs
        .iter()
        .zip(names)
        .map(|(req, name)| queue::granted(inner, req, (name, mode), rev, lease.clone(), deadline))
        .collect();
    Ok(Some(grants))
}
