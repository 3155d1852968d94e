//! A change signal for election observers: the lock key's index, read before
//! the signal is returned, then a blocking query from that index, which returns
//! once the key changes (acquired, released, rewritten).

use std::time::Duration;

use lockkit_core::driver::ChangeSignal;
use lockkit_core::{LockKey, Result};

use crate::driver::ConsulDriver;

/// The longest one blocking query waits (Consul caps it at 10 minutes); an
/// observer drops the signal sooner, at its interval.
const LONGEST_BLOCK: Duration = Duration::from_secs(300);

/// Arms a signal on the next change of `key`'s lock key.
pub(crate) async fn watch(driver: &ConsulDriver, key: &LockKey) -> Result<ChangeSignal> {
    let kv_key = driver.kv_key(key);
    let api = driver.api().clone();
    let (_, index) = api.kv_get(&kv_key, None).await?;
    Ok(Box::pin(async move {
        // An error returns too: the observer reads again.
        let _ = api.kv_get(&kv_key, Some((index, LONGEST_BLOCK))).await;
    }))
}
