//! `Locker::lock_all` on a driver that takes several keys in one request
//! (`LockDriver::try_acquire_all`): free keys go in that one request; a held key
//! sends the set one by one, leaving nothing behind; and a set whose caller
//! leaves while the request is in flight is released once it lands.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use lockkit_core::driver::{Contention, Grant};
use lockkit_core::mem::MemDriver;
use lockkit_core::{
    AcquireRequest, Capabilities, LockDriver, LockError, LockKey, Locker, OwnerId, Result,
    async_trait,
};
use tokio::time::{Instant, timeout};

/// mem, counting the requests for several keys, and the single acquires.
#[derive(Debug, Default)]
struct Counting {
    inner: MemDriver,
    at_once: AtomicUsize,
    one_by_one: AtomicUsize,
    /// How long a request for several keys takes before it reaches mem.
    delay: Option<Duration>,
    /// Set once a delayed request for several keys has been granted.
    landed: AtomicBool,
}

#[async_trait]
impl LockDriver for Counting {
    fn name(&self) -> &'static str {
        "counting"
    }
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }
    async fn contend<'a>(&'a self, req: &'a AcquireRequest) -> Result<Contention<'a>> {
        self.one_by_one.fetch_add(1, Ordering::SeqCst);
        self.inner.contend(req).await
    }
    async fn try_acquire_all(&self, reqs: &[AcquireRequest]) -> Result<Option<Vec<Grant>>> {
        self.at_once.fetch_add(1, Ordering::SeqCst);
        if let Some(delay) = self.delay {
            tokio::time::sleep(delay).await;
        }
        let grants = self.inner.try_acquire_all(reqs).await;
        self.landed.store(true, Ordering::SeqCst);
        grants
    }
    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant> {
        self.inner.extend(key, owner, ttl).await
    }
    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        self.inner.release(key, owner).await
    }
}

const KEYS: [&str; 3] = ["acct-9", "acct-2", "acct-5"];

/// Whether another owner can take each of [`KEYS`] now (it gives each back).
async fn all_free(locker: &Locker) -> bool {
    for key in KEYS {
        match locker.try_lock(key).await {
            Ok(guard) => guard.release().await.unwrap(),
            Err(_) => return false,
        }
    }
    true
}

#[tokio::test]
async fn free_keys_are_taken_in_one_request() {
    let driver = Arc::new(Counting::default());
    let (locker, other) = (Locker::new(driver.clone()), Locker::new(driver.clone()));
    let set = locker.lock_all(KEYS).await.unwrap();
    assert_eq!(driver.at_once.load(Ordering::SeqCst), 1);
    assert_eq!(driver.one_by_one.load(Ordering::SeqCst), 0);
    assert_eq!(set.tokens().count(), 3);
    for key in KEYS {
        assert!(matches!(
            other.try_lock(key).await,
            Err(LockError::Contended { .. })
        ));
    }
    set.release().await.unwrap();
    assert!(all_free(&other).await);
}

#[tokio::test]
async fn a_held_key_sends_the_set_one_by_one_and_leaves_nothing_behind() {
    let driver = Arc::new(Counting::default());
    let (locker, other) = (Locker::new(driver.clone()), Locker::new(driver.clone()));
    let held = other.try_lock("acct-5").await.unwrap();
    let contends = driver.one_by_one.load(Ordering::SeqCst);
    match locker.lock_all(KEYS).no_wait().await {
        Err(LockError::Contended { key }) => assert_eq!(key, "acct-5"),
        other => panic!("expected Contended on acct-5, got {other:?}"),
    }
    assert_eq!(driver.at_once.load(Ordering::SeqCst), 1);
    assert!(driver.one_by_one.load(Ordering::SeqCst) > contends);
    held.release().await.unwrap();
    assert!(all_free(&other).await);
}

#[tokio::test]
async fn a_set_whose_caller_left_in_flight_is_released_when_it_lands() {
    let driver = Arc::new(Counting {
        delay: Some(Duration::from_millis(200)),
        ..Counting::default()
    });
    let (locker, other) = (Locker::new(driver.clone()), Locker::new(driver.clone()));
    let left = timeout(Duration::from_millis(20), locker.lock_all(KEYS)).await;
    assert!(left.is_err(), "the set came back before its request landed");
    let waited = timeout(Duration::from_secs(5), async {
        while !driver.landed.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        while !all_free(&other).await {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "the keys of an abandoned set stayed held");
}
