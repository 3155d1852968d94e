//! An election leader's new value: one txn that rewrites the value of the
//! holder's key, if it is still the key this hold created, keeping its lease (the
//! key's create_revision, the token, stays).

use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
use lockkit_core::{LockKey, LockMode, OwnerId, Result};

use super::connection::Inner;
use super::error::gone;
use super::keys;
use super::request::within;

/// Stores `text` on `owner`'s exclusive hold of `key`.
pub(crate) async fn proclaim(
    inner: &Inner,
    key: &LockKey,
    owner: &OwnerId,
    text: &str,
) -> Result<()> {
    let name = inner.holds.entry_of(&inner.prefix, key, owner);
    let record = match inner.holds.get(&name) {
        Some(r) if r.mode == LockMode::Exclusive && !r.gone => r,
        _ => return Err(gone(key)),
    };
    let txn = Txn::new()
        .when([Compare::create_revision(
            name.as_str(),
            CompareOp::Equal,
            record.rev,
        )])
        .and_then([TxnOp::put(
            name.as_str(),
            keys::value(LockMode::Exclusive, text),
            Some(PutOptions::new().with_ignore_lease()),
        )]);
    let mut kv = inner.client.kv_client();
    let resp = within(inner.timeouts.request, "proclaim", kv.txn(txn)).await?;
    if resp.succeeded() {
        Ok(())
    } else {
        Err(gone(key))
    }
}
