//! Listing held locks: one recursive read of the KV keys under the escaped
//! prefix. A lock's key stays after its release (its `ModifyIndex` is the next
//! token's floor), so the client inspects each name found.

use lockkit_core::{LockKey, Result};

use crate::driver::ConsulDriver;
use crate::keys::{escape_into, name_of};

/// The lock names with keys under `prefix`, in order, at most `limit`.
pub(crate) async fn list(
    driver: &ConsulDriver,
    prefix: &str,
    limit: usize,
) -> Result<Vec<LockKey>> {
    let root = driver.prefix();
    let start = escape_into(format!("{root}/"), prefix, false);
    let (entries, _) = driver.api().kv_list(&start, None).await?;
    let mut keys: Vec<LockKey> = entries
        .iter()
        .filter_map(|e| name_of(root, &e.key))
        .filter(|k| k.as_str().starts_with(prefix))
        .collect();
    keys.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    keys.dedup();
    keys.truncate(limit);
    Ok(keys)
}
