//! Renewals on a real Redis server: one script call renews a batch of holds of
//! every mode, and a hold that is gone is reported lost without touching the rest.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit_core::driver::acquire;
use lockkit_core::{AcquireRequest, LockDriver, LockKey, LockMode, OwnerId, Renewal, Wait};
use lockkit_redis::{RedisDriver, RedisOptions};
use lockkit_testkit::Redis;

mod common;
use common::{admin, script_calls};

const TTL: Duration = Duration::from_secs(5);

/// Takes `key` in `mode` for a new owner, with a fixed lease of [`TTL`].
async fn hold(driver: &RedisDriver, key: &str, mode: LockMode) -> Renewal {
    let owner = OwnerId::new();
    let key = LockKey::new(key).unwrap();
    let req = AcquireRequest::new(key.clone(), owner.clone(), TTL, Wait::NoWait).with_mode(mode);
    acquire(driver, &req).await.unwrap();
    Renewal::new(key, owner, Duration::from_secs(30))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_call_renews_a_lock_a_reader_and_a_permit() {
    let server = Redis::start().await.unwrap();
    let url = server.url();
    let mut conn = admin(&redis::Client::open(url.as_str()).unwrap()).await;
    let driver = RedisDriver::connect(RedisOptions::from_url(&url).unwrap())
        .await
        .unwrap();
    let renewals = [
        hold(&driver, "orders", LockMode::Exclusive).await,
        hold(&driver, "report", LockMode::Shared).await,
        hold(&driver, "pool", LockMode::Permit { limit: 2 }).await,
        // Never held: reported lost, the others renewed all the same.
        Renewal::new(
            LockKey::new("nobody").unwrap(),
            OwnerId::new(),
            Duration::from_secs(30),
        ),
    ];

    let before = script_calls(&mut conn).await;
    let renewed = driver.extend_many(&renewals).await;
    assert_eq!(script_calls(&mut conn).await - before, 1, "one script call");
    assert!(renewed[..3].iter().all(Result::is_ok), "{renewed:?}");
    assert!(renewed[3].as_ref().is_err_and(|e| e.is_lost()));

    // Each lease now runs to the renewal's 30 s, not the grant's 5 s.
    for key in ["orders", "report", "pool"] {
        let seen = driver.inspect(&LockKey::new(key).unwrap()).await.unwrap();
        let left = seen.holders[0].remaining.unwrap();
        assert!(left > TTL, "{key}: {left:?} left");
    }
}
