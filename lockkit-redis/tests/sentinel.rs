//! Redis Sentinel on a real group from the testkit (a master, 2 replicas, 3
//! sentinels, plain and TLS only): the driver finds the master through the
//! sentinels, follows a failover to the promoted replica, and its waiters are
//! woken there.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit_conformance::until_ok;
use lockkit_core::{LockError, Locker};
use lockkit_testkit::RedisSentinels;

const WITHIN: Duration = Duration::from_secs(30);

async fn locker(url: &str) -> Locker {
    lockkit::connect(url).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_driver_follows_a_failover_to_the_promoted_replica() {
    follows_a_failover(RedisSentinels::start(2, 3).await.unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_driver_follows_a_failover_over_tls() {
    // Sentinels and data nodes on TLS only: the URL is `rediss-sentinel://`.
    let group = RedisSentinels::start_tls(2, 3).await.unwrap();
    assert!(group.url().starts_with("rediss-sentinel://"));
    follows_a_failover(group).await;
}

/// The lockers on `group`'s URL are granted on the master, then, after a
/// failover, on the promoted replica with a higher token, where a waiter on the
/// other locker is woken.
async fn follows_a_failover(mut group: RedisSentinels) {
    let url = group.url();
    let (a, b) = (locker(&url).await, locker(&url).await);
    let before = a.lock("orders").await.unwrap();
    let first = before.token();
    before.release().await.unwrap();

    let old = group.master_port().await.unwrap();
    let new = group.fail_over(WITHIN).await.unwrap();
    assert_ne!(old, new);

    // The same lockers, no reconnect by hand: granted on the new master, whose
    // replicated counter keeps the tokens rising.
    let after = until_ok(WITHIN, || a.try_lock("orders"))
        .await
        .expect("no grant on the new master within WITHIN of the failover");
    assert!(after.token() > first, "{} after {first}", after.token());
    let promoted = group.nodes.iter().find(|n| n.port() == new).unwrap();
    let keys = promoted.ask("KEYS lockkit:{orders}:*").await.unwrap();
    assert!(
        keys.iter().any(|k| k.ends_with(":lock")),
        "the lock is not on the new master: {keys:?}"
    );

    // A waiter on the other locker is granted when the holder releases there.
    let waiter = {
        let b = b.clone();
        tokio::spawn(async move { b.lock("orders").wait(WITHIN).await })
    };
    lockkit_conformance::until_waiters(&a, "orders", 1, WITHIN)
        .await
        .unwrap();
    let token = after.token();
    after.release().await.unwrap();
    let handed = waiter.await.unwrap().unwrap();
    assert!(handed.token() > token);
    handed.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_name_the_sentinels_do_not_know_fails_at_connect() {
    let group = RedisSentinels::start(1, 1).await.unwrap();
    let url = group.url().replace("/lockkit", "/nosuchmaster");
    match lockkit::connect(&url).await {
        Err(LockError::Connection { message, .. }) => {
            assert!(message.contains("nosuchmaster"), "{message}")
        }
        other => panic!("an unknown master name: {:?}", other.map(|_| ())),
    }
    match lockkit::connect("redis-sentinel://127.0.0.1:26379").await {
        Err(LockError::InvalidUrl { reason, .. }) => assert!(reason.contains("master"), "{reason}"),
        other => panic!("no master name: {:?}", other.map(|_| ())),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_replicas_grants_only_what_enough_replicas_acknowledged() {
    let group = RedisSentinels::start(2, 1).await.unwrap();
    let url = group.url();
    let two = locker(&format!("{url}?wait_replicas=2")).await;
    // The replicas may still be syncing: retried until both acknowledge.
    let held = until_ok(WITHIN, || two.try_lock("orders"))
        .await
        .expect("the replicas never acknowledged a grant within WITHIN");
    held.extend(Duration::from_secs(5)).await.unwrap();
    held.release().await.unwrap();

    // Three replicas never acknowledge: the grant is refused, and given back.
    let three = locker(&format!("{url}?wait_replicas=3&wait_timeout_ms=100")).await;
    match three.try_lock("orders").await {
        Err(e) => assert!(e.to_string().contains("wait_replicas"), "{e}"),
        Ok(g) => panic!("granted with 2 of 3 replicas: token {}", g.token()),
    }
    two.try_lock("orders")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();

    for (bad, why) in [
        ("redis://127.0.0.1:1?wait_replicas=0", "1 to 16"),
        (
            "redis://127.0.0.1:1?wait_timeout_ms=5",
            "needs `wait_replicas`",
        ),
    ] {
        match lockkit_redis::RedisOptions::from_url(bad) {
            Err(LockError::InvalidUrl { reason, .. }) => assert!(reason.contains(why), "{reason}"),
            other => panic!("{bad}: {other:?}"),
        }
    }
}
