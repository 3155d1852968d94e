//! Drivers built on the application's own redis-rs clients, against real servers:
//! they take the same locks as drivers connected by URL, and leave the client
//! working when they are dropped.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::time::Duration;

use lockkit_conformance::exclude_each_other;
use lockkit_core::{LockError, Locker, WakeUp};
use lockkit_redis::{RedisDriver, RedisOptions};
use lockkit_testkit::{Redis, RedisCluster};
use redis::cluster::ClusterClient;

const WITHIN: Duration = Duration::from_secs(15);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_server_client_of_the_application_shares_locks_and_stays_usable() {
    let server = Redis::start().await.unwrap();
    let client = redis::Client::open(server.url()).unwrap();
    let options = RedisOptions::default().with_prefix("app").unwrap();
    let driver = RedisDriver::from_client(client.clone(), options)
        .await
        .unwrap();
    let app = Locker::new(Arc::new(driver));
    assert_eq!(app.capabilities().wake_up, WakeUp::Notify);
    let by_url = lockkit::connect(&format!("{}?prefix=app", server.url()))
        .await
        .unwrap();
    exclude_each_other(&app, &by_url, "orders", WITHIN)
        .await
        .unwrap();
    drop(app);
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let pong: String = redis::cmd("PING").query_async(&mut conn).await.unwrap();
    assert_eq!(pong, "PONG");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_client_of_the_application_shares_locks_and_its_waiters_poll() {
    let cluster = RedisCluster::start(3).await.unwrap();
    let url = cluster.url();
    let seeds: Vec<String> = url["redis-cluster://".len()..]
        .split(',')
        .map(|h| format!("redis://{h}"))
        .collect();
    let client = ClusterClient::new(seeds.clone()).unwrap();
    let driver = RedisDriver::from_cluster_client(client.clone(), RedisOptions::default())
        .await
        .unwrap();
    assert!(driver.is_cluster());
    let app = Locker::new(Arc::new(driver));
    assert_eq!(app.capabilities().wake_up, WakeUp::Poll);
    let by_url = lockkit::connect(&url).await.unwrap();
    exclude_each_other(&app, &by_url, "orders", WITHIN)
        .await
        .unwrap();
    drop(app);
    let mut conn = client.get_async_connection().await.unwrap();
    let pong: String = redis::cmd("PING").query_async(&mut conn).await.unwrap();
    assert_eq!(pong, "PONG");

    // A single-server client that reaches a cluster node is told where to go.
    let node = redis::Client::open(seeds[0].as_str()).unwrap();
    match RedisDriver::from_client(node, RedisOptions::default()).await {
        Err(LockError::Config(m)) => assert!(m.contains("from_cluster_client"), "{m}"),
        other => panic!("a cluster node's client: {:?}", other.map(|_| ())),
    }
}

#[test]
fn a_prefix_set_in_code_is_checked_as_in_a_url() {
    for bad in ["", "a{b", "}"] {
        match RedisOptions::default().with_prefix(bad) {
            Err(LockError::Config(m)) => assert!(m.contains("braces"), "{m}"),
            other => panic!("prefix {bad:?}: {other:?}"),
        }
    }
    assert_eq!(RedisOptions::default().prefix(), "lockkit");
}
