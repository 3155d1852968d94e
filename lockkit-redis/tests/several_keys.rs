//! `lock_all` on real Redis servers from the testkit, counted by the servers
//! themselves (`INFO commandstats`): a single server takes free keys in one
//! script call; a Cluster takes the locks of one slot (keys sharing a hash tag)
//! in one call, all or none, and other sets one by one.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use lockkit_core::{LockError, Locker};
use lockkit_testkit::Redis;

mod common;
use common::{admin, calls, locker};

/// The script calls the servers at `ports` ran, summed.
async fn script_calls(ports: &[u16]) -> u64 {
    let mut sum = 0;
    for port in ports {
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).unwrap();
        sum += calls(&mut admin(&client).await, "evalsha").await;
    }
    sum
}

/// The script calls of `lock_all(keys)` (then released), after a first pair
/// that warms the driver up.
async fn calls_to_lock_all(locker: &Locker, ports: &[u16], keys: [&str; 2]) -> u64 {
    locker
        .lock_all(keys)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    let before = script_calls(ports).await;
    let set = locker.lock_all(keys).await.unwrap();
    let after = script_calls(ports).await;
    set.release().await.unwrap();
    after - before
}

#[tokio::test]
async fn a_single_server_takes_free_keys_in_one_script_call() {
    let server = Redis::start().await.unwrap();
    let locker = locker(&server.url()).await;
    let ports = [server.port()];
    assert_eq!(
        calls_to_lock_all(&locker, &ports, ["acct-9", "acct-2"]).await,
        1
    );
}

#[cfg(feature = "cluster")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_takes_the_locks_of_one_slot_in_one_call_and_others_in_order() {
    let cluster = lockkit_testkit::RedisCluster::start(3).await.unwrap();
    let ports: Vec<u16> = cluster.nodes.iter().map(|node| node.port()).collect();
    let (locker, other) = (locker(&cluster.url()).await, locker(&cluster.url()).await);
    let one_slot = ["{acct}:9", "{acct}:2"];
    assert_eq!(calls_to_lock_all(&locker, &ports, one_slot).await, 1);
    // `acct-9` and `acct-2` hash to slots 2 and 8 thousand apart.
    assert_eq!(
        calls_to_lock_all(&locker, &ports, ["acct-9", "acct-2"]).await,
        2
    );

    // All or none: with one of the slot's locks held elsewhere, nothing.
    let held = other.try_lock("{acct}:2").await.unwrap();
    match locker.lock_all(one_slot).no_wait().await {
        Err(LockError::Contended { key }) => assert_eq!(key, "{acct}:2"),
        got => panic!("expected Contended on {{acct}}:2, got {got:?}"),
    }
    other
        .try_lock("{acct}:9")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    held.release().await.unwrap();
}
