//! Helpers shared by the ZooKeeper test binaries.

#![allow(dead_code)] // Not every test binary uses every helper.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::{LockError, LockGuard, Locker};
use lockkit_testkit::ZooKeeper;
use lockkit_zk::{ZkDriver, ZkOptions};

/// The session timeout the tests ask for.
pub(crate) const SESSION_MS: u64 = 1000;

/// A driver on `url` with sessions of [`SESSION_MS`].
pub(crate) async fn driver(url: &str) -> Result<Arc<ZkDriver>, LockError> {
    let url = format!("{url}?session_timeout_ms={SESSION_MS}");
    Ok(Arc::new(
        ZkDriver::connect(ZkOptions::from_url(&url)?).await?,
    ))
}

/// A locker on [`driver`].
pub(crate) async fn locker(url: &str) -> Result<Locker, LockError> {
    Ok(Locker::new(driver(url).await?))
}

/// Two clients of `zk`, the first holding `key` (lease 5 s): the holder's
/// locker, the other's, and the hold.
pub(crate) async fn one_holds_of_two(
    zk: &ZooKeeper,
    key: &str,
) -> Result<(Locker, Locker, LockGuard), LockError> {
    let (holder, other) = (locker(&zk.url()).await?, locker(&zk.url()).await?);
    let held = holder
        .lock(key)
        .ttl(Duration::from_secs(5))
        .no_wait()
        .await?;
    Ok((holder, other, held))
}

/// Takes `key` with a `try_lock` (it must be free) and releases it.
pub(crate) async fn takes_and_releases(locker: &Locker, key: &str) -> Result<(), LockError> {
    locker.try_lock(key).await?.release().await
}
