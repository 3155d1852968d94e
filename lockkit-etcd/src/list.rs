//! Listing held locks: one keys-only range read of the queues whose escaped
//! names start with the prefix asked for. A lock's queue has keys only while it
//! is held or waited for (each key lives on its holder's or waiter's lease).

use etcd_client::GetOptions;
use lockkit_core::{LockKey, Result};

use super::connection::Inner;
use super::keys;
use super::request::within;

/// The most etcd keys one listing reads (bounds a listing of a huge keyspace).
const MAX_KEYS: i64 = 100_000;

/// The keys with queue entries whose names start with `prefix`, in order, at
/// most `limit`.
pub(crate) async fn list(inner: &Inner, prefix: &str, limit: usize) -> Result<Vec<LockKey>> {
    let root = format!("{}/", inner.prefix);
    let start = keys::escape_into(root.clone(), prefix);
    let options = GetOptions::new()
        .with_prefix()
        .with_keys_only()
        .with_limit(MAX_KEYS);
    let mut kv = inner.client.kv_client();
    let resp = within(inner.timeouts.request, "list", kv.get(start, Some(options))).await?;
    let mut found: Vec<LockKey> = resp
        .kvs()
        .iter()
        .filter_map(|kv| {
            let rest = kv.key_str().ok()?.strip_prefix(&root)?;
            let (escaped, _) = rest.split_once('/')?;
            LockKey::new(keys::unescape(escaped)).ok()
        })
        .collect();
    found.dedup();
    found.truncate(limit);
    Ok(found)
}
