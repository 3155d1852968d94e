//! A Redis whose `maxmemory-policy` can evict lockkit's keys is refused, on every
//! topology, at connect and after a reconnect, unless the URL says
//! `eviction=accept`; against real servers from the testkit.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::{LockError, Locker};
use lockkit_redis::{Eviction, RedisDriver, RedisOptions};
use lockkit_testkit::{Redis, RedisCluster, RedisMasters, RedisSentinels, RedisSettings};
use redis::cluster::ClusterClient;
use tokio::time::Instant;

const WITHIN: Duration = Duration::from_secs(30);

/// A server used as a cache: a memory limit, and `policy` when it is reached.
fn cache(policy: &str) -> RedisSettings {
    RedisSettings::default()
        .maxmemory("8mb")
        .maxmemory_policy(policy)
}

/// The refusal's message, or a panic naming what came instead.
fn refusal<T>(r: Result<T, LockError>) -> String {
    match r {
        Err(LockError::Config(message)) => message,
        Err(e) => panic!("expected the eviction refusal, got: {e:?}"),
        Ok(_) => panic!("expected the eviction refusal, but it connected"),
    }
}

/// Asserts the refusal names the setting, the danger and the fix.
fn names_policy_danger_and_fix(message: &str, policy: &str) {
    for part in [
        &format!("maxmemory-policy {policy}`") as &str,
        "two clients then hold the same lock",
        "CONFIG SET maxmemory-policy noeviction",
        "a Redis of their own",
        "eviction=accept",
    ] {
        assert!(message.contains(part), "no `{part}` in: {message}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_can_evict_any_key_is_refused_at_connect() {
    let server = Redis::start_with_settings(&cache("allkeys-lru"))
        .await
        .unwrap();
    let message = refusal(lockkit::connect(&server.url()).await);
    names_policy_danger_and_fix(&message, "allkeys-lru");
    assert!(message.contains("fencing counters"), "{message}");
    assert!(
        message.contains("tokens then start again and repeat"),
        "{message}"
    );
    let port = server.port();
    assert!(
        message.contains(&format!("Redis at 127.0.0.1:{port}")),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_can_evict_keys_with_a_ttl_is_refused_for_held_locks() {
    let server = Redis::start_with_settings(&cache("volatile-lru"))
        .await
        .unwrap();
    let message = refusal(lockkit::connect(&server.url()).await);
    names_policy_danger_and_fix(&message, "volatile-lru");
    assert!(message.contains("held locks"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eviction_accept_connects_to_a_server_that_can_evict() {
    let server = Redis::start_with_settings(&cache("allkeys-lru"))
        .await
        .unwrap();
    let locker = lockkit::connect(&format!("{}?eviction=accept", server.url()))
        .await
        .unwrap();
    takes_and_releases(&locker, "orders").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn where_config_is_renamed_away_the_policy_is_read_from_info() {
    let safe = Redis::start_with_settings(&RedisSettings::default().without_config_command())
        .await
        .unwrap();
    assert!(safe.ask("CONFIG GET maxmemory-policy").await.is_none());
    let locker = lockkit::connect(&safe.url()).await.unwrap();
    takes_and_releases(&locker, "orders").await;

    let unsafe_one = Redis::start_with_settings(&cache("allkeys-lru").without_config_command())
        .await
        .unwrap();
    let message = refusal(lockkit::connect(&unsafe_one.url()).await);
    names_policy_danger_and_fix(&message, "allkeys-lru");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_made_unsafe_is_refused_once_the_client_reconnects() {
    let server = Redis::start().await.unwrap();
    let connected = Instant::now();
    let locker = lockkit::connect(&server.url()).await.unwrap();
    takes_and_releases(&locker, "orders").await;

    // Changed under the open connection: not seen yet, the connection was checked.
    let set = server.ask("CONFIG SET maxmemory-policy allkeys-lru").await;
    assert_eq!(set.unwrap(), ["OK"]);
    takes_and_releases(&locker, "orders").await;

    // Its connections dropped, the client reconnects, and the next request
    // checks again (well before the periodic re-check is due).
    let killed = server.ask("CLIENT KILL TYPE normal").await.unwrap();
    assert_ne!(killed, ["0"]);
    let message = loop {
        match locker.try_lock("orders").await {
            Err(LockError::Config(message)) => break message,
            Err(e) => assert!(e.is_retryable(), "{e:?}"),
            Ok(_) => panic!("granted on a server that now runs allkeys-lru"),
        }
        assert!(
            connected.elapsed() < Duration::from_secs(8),
            "no refusal yet"
        );
    };
    names_policy_danger_and_fix(&message, "allkeys-lru");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_application_client_constructor_checks_the_policy_too() {
    let server = Redis::start_with_settings(&cache("allkeys-random"))
        .await
        .unwrap();
    let client = redis::Client::open(server.url()).unwrap();
    let message = refusal(RedisDriver::from_client(client.clone(), RedisOptions::default()).await);
    names_policy_danger_and_fix(&message, "allkeys-random");
    let accepting = RedisOptions::default().with_eviction(Eviction::Accept);
    let driver = RedisDriver::from_client(client, accepting).await.unwrap();
    let locker = Locker::new(Arc::new(driver));
    takes_and_releases(&locker, "orders").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_with_one_master_that_can_evict_is_refused_at_connect() {
    let cluster = RedisCluster::start(3).await.unwrap();
    let bad = cluster.nodes[1].port();
    let set = cluster.nodes[1]
        .ask("CONFIG SET maxmemory-policy volatile-ttl")
        .await;
    assert_eq!(set.unwrap(), ["OK"]);
    let url = cluster.url();
    for url in [
        url.clone(),
        format!("redis://127.0.0.1:{}", cluster.nodes[0].port()),
    ] {
        let message = refusal(lockkit::connect(&url).await);
        names_policy_danger_and_fix(&message, "volatile-ttl");
        assert!(
            message.contains(&format!("Redis Cluster master 127.0.0.1:{bad}")),
            "{message}"
        );
    }
    // The application's cluster client too.
    let seeds: Vec<String> = url["redis-cluster://".len()..]
        .split(',')
        .map(|h| format!("redis://{h}"))
        .collect();
    let client = ClusterClient::new(seeds).unwrap();
    let refused = RedisDriver::from_cluster_client(client, RedisOptions::default()).await;
    names_policy_danger_and_fix(&refusal(refused), "volatile-ttl");

    let locker = lockkit::connect(&format!("{url}?eviction=accept"))
        .await
        .unwrap();
    takes_and_releases(&locker, "orders").await;
}

/// The cluster client reconnects to a node without telling (it retries the
/// request), so a cluster is also checked again every 10 s while in use.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_master_made_unsafe_is_refused_within_the_periodic_recheck() {
    let cluster = RedisCluster::start(3).await.unwrap();
    let locker = lockkit::connect(&cluster.url()).await.unwrap();
    takes_and_releases(&locker, "orders").await;
    let set = cluster.nodes[2]
        .ask("CONFIG SET maxmemory-policy allkeys-lfu")
        .await;
    assert_eq!(set.unwrap(), ["OK"]);
    let changed = Instant::now();
    let message = loop {
        // The recheck may fall between a grant and its release: the release is
        // then the request refused.
        let refused = match locker.try_lock("orders").await {
            Ok(g) => g.release().await,
            Err(e) => Err(e),
        };
        match refused {
            Err(LockError::Config(message)) => break message,
            Err(e) => panic!("{e:?}"),
            Ok(()) => {}
        }
        assert!(
            changed.elapsed() < Duration::from_secs(15),
            "no refusal yet"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    names_policy_danger_and_fix(&message, "allkeys-lfu");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_master_that_can_evict_is_refused_at_connect() {
    let group = RedisSentinels::start(1, 1).await.unwrap();
    let set = group.nodes[0]
        .ask("CONFIG SET maxmemory-policy allkeys-lru")
        .await;
    assert_eq!(set.unwrap(), ["OK"]);
    let message = refusal(lockkit::connect(&group.url()).await);
    names_policy_danger_and_fix(&message, "allkeys-lru");
    assert!(
        message.contains("the Sentinel master `lockkit`"),
        "{message}"
    );
    let url = format!("{}?eviction=accept", group.url());
    let locker = lockkit::connect(&url).await.unwrap();
    takes_and_releases(&locker, "orders").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_can_evict_is_refused_once_promoted() {
    let mut group = RedisSentinels::start(2, 3).await.unwrap();
    for replica in &group.nodes[1..] {
        let set = replica.ask("CONFIG SET maxmemory-policy allkeys-lru").await;
        assert_eq!(set.unwrap(), ["OK"]);
    }
    let locker = lockkit::connect(&group.url()).await.unwrap();
    takes_and_releases(&locker, "orders").await;

    let new = group.fail_over(WITHIN).await.unwrap();
    let promoted = Instant::now();
    let message = loop {
        match locker.try_lock("orders").await {
            Err(LockError::Config(message)) => break message,
            Err(e) => assert!(e.is_retryable(), "{e:?}"),
            Ok(_) => panic!("granted on a promoted replica that runs allkeys-lru"),
        }
        assert!(promoted.elapsed() < WITHIN, "no refusal yet");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    names_policy_danger_and_fix(&message, "allkeys-lru");
    assert!(message.contains(&format!("127.0.0.1:{new}")), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redlock_master_that_can_evict_fails_the_connect() {
    let masters = RedisMasters::start(3).await.unwrap();
    let bad = masters.nodes[2].port();
    let set = masters.nodes[2]
        .ask("CONFIG SET maxmemory-policy allkeys-lru")
        .await;
    assert_eq!(set.unwrap(), ["OK"]);
    let message = refusal(lockkit::connect(&masters.url()).await);
    names_policy_danger_and_fix(&message, "allkeys-lru");
    assert!(
        message.contains(&format!("Redlock master redis://127.0.0.1:{bad}")),
        "{message}"
    );
    let url = format!("{}?eviction=accept", masters.url());
    let locker = lockkit::connect(&url).await.unwrap();
    takes_and_releases(&locker, "orders").await;
}

/// After connect, a master refused counts as failed for the quorum: locks are
/// granted by the others, and none is written to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redlock_master_made_unsafe_no_longer_counts_for_the_quorum() {
    let masters = RedisMasters::start(3).await.unwrap();
    let locker = lockkit::connect(&masters.url()).await.unwrap();
    takes_and_releases(&locker, "before").await;
    let bad = &masters.nodes[0];
    assert_eq!(
        bad.ask("CONFIG SET maxmemory-policy volatile-lru")
            .await
            .unwrap(),
        ["OK"]
    );
    assert_ne!(bad.ask("CLIENT KILL TYPE normal").await.unwrap(), ["0"]);
    for i in 0..3 {
        let key = format!("after{i}");
        let guard = lockkit_conformance::until_ok(WITHIN, || locker.try_lock(&key))
            .await
            .unwrap();
        let on_bad = bad
            .ask(&format!("EXISTS lockkit:{{{key}}}:lock"))
            .await
            .unwrap();
        let on_good = masters.nodes[1]
            .ask(&format!("EXISTS lockkit:{{{key}}}:lock"))
            .await
            .unwrap();
        assert_eq!(
            (on_bad, on_good),
            (vec!["0".to_owned()], vec!["1".to_owned()])
        );
        guard.release().await.unwrap();
    }
}

/// A master that lets lockkit read neither `CONFIG` nor `INFO` (an ACL user
/// without them) is refused too, unless the URL accepts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_that_cannot_be_read_is_refused() {
    let masters = RedisMasters::start(3).await.unwrap();
    for m in &masters.nodes {
        let acl = "ACL SETUSER locker on >pw ~* &* +@all -config -info";
        assert_eq!(m.ask(acl).await.unwrap(), ["OK"]);
    }
    let url = masters.url().replace("redlock://", "redlock://locker:pw@");
    let message = refusal(lockkit::connect(&url).await);
    assert!(
        message.contains("cannot read the `maxmemory-policy`"),
        "{message}"
    );
    assert!(message.contains("no permissions"), "{message}");
    assert!(message.contains("eviction=accept"), "{message}");
    assert!(!message.contains("pw@"), "{message}");
    let locker = lockkit::connect(&format!("{url}?eviction=accept"))
        .await
        .unwrap();
    takes_and_releases(&locker, "orders").await;
}

/// Takes `key` on `locker`, then releases it: the driver works.
async fn takes_and_releases(locker: &lockkit::Locker, key: &str) {
    locker.lock(key).await.unwrap().release().await.unwrap();
}
