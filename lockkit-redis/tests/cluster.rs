//! Redis Cluster specifics on a real 3-master cluster from the testkit: detection
//! from a plain `redis://` URL, locking through a slot migration (MOVED
//! redirects), watchdog renewals of locks spread over many slots, and (on 3
//! masters with a replica each) a hold and its waiter carried across a failover.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

mod common;
use common::driver;

use std::time::Duration;

use lockkit_core::{LockError, Locker};
use lockkit_testkit::RedisCluster;
use tokio::time::Instant;

async fn node(port: u16) -> redis::aio::MultiplexedConnection {
    redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .unwrap()
        .get_multiplexed_async_connection_with_config(&common::admin_config())
        .await
        .unwrap()
}

async fn cmd<T: redis::FromRedisValue>(
    conn: &mut redis::aio::MultiplexedConnection,
    args: &[&str],
) -> T {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query_async(conn).await.unwrap()
}

/// The port of the master serving `slot`, from `CLUSTER NODES`.
async fn owner_of(conn: &mut redis::aio::MultiplexedConnection, slot: u16) -> u16 {
    let nodes: String = cmd(conn, &["CLUSTER", "NODES"]).await;
    for line in nodes.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let serves = fields.iter().skip(8).any(|range| {
            let (lo, hi) = range.split_once('-').unwrap_or((range, range));
            match (lo.parse::<u16>(), hi.parse::<u16>()) {
                (Ok(lo), Ok(hi)) => (lo..=hi).contains(&slot),
                _ => false,
            }
        });
        if serves {
            let addr = fields[1].split('@').next().unwrap();
            return addr.rsplit(':').next().unwrap().parse().unwrap();
        }
    }
    panic!("no master serves slot {slot}:\n{nodes}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_url_to_a_cluster_node_is_detected() {
    let cluster = RedisCluster::start(3).await.unwrap();
    let plain = format!("redis://127.0.0.1:{}", cluster.nodes[0].port());
    let d = driver(&plain).await;
    assert!(
        d.is_cluster(),
        "a redis:// URL to a cluster node uses the cluster"
    );
    // Keys in slots of every master are reachable through the one seed.
    let locker = Locker::new(d);
    for i in 0..30 {
        let g = locker.try_lock(format!("spread/{i}")).await.unwrap();
        g.release().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locking_keeps_working_through_a_slot_migration() {
    let cluster = RedisCluster::start(3).await.unwrap();
    let url = cluster.url();
    let key = "migrating/sku-42";
    let lock_key = format!("lockkit:{{{key}}}:lock");
    let ports: Vec<u16> = cluster.nodes.iter().map(|n| n.port()).collect();
    let mut any = node(ports[0]).await;
    let slot: u16 = cmd(&mut any, &["CLUSTER", "KEYSLOT", &lock_key]).await;
    let source_port = owner_of(&mut any, slot).await;
    let target_port = *ports.iter().find(|&&p| p != source_port).unwrap();
    let (mut source, mut target) = (node(source_port).await, node(target_port).await);
    let source_id: String = cmd(&mut source, &["CLUSTER", "MYID"]).await;
    let target_id: String = cmd(&mut target, &["CLUSTER", "MYID"]).await;

    let holder = Locker::new(driver(&url).await);
    let other = Locker::new(driver(&url).await);
    let held = holder
        .lock(key)
        .lease(Duration::from_secs(30))
        .no_wait()
        .await
        .unwrap();
    let first_token = held.token();

    // Move the slot, with the lock, its fencing counter and its waiters set, to
    // another master (what `redis-cli --cluster reshard` does, step by step).
    let slot_s = slot.to_string();
    let _: () = cmd(
        &mut target,
        &["CLUSTER", "SETSLOT", &slot_s, "IMPORTING", &source_id],
    )
    .await;
    let _: () = cmd(
        &mut source,
        &["CLUSTER", "SETSLOT", &slot_s, "MIGRATING", &target_id],
    )
    .await;
    // Mid-migration, with every key still on the source, the lock is still held:
    // a try_lock is never granted. Redis answers a script whose keys are only
    // partly present with TRYAGAIN, so after retrying for a moment the driver
    // reports that (a retryable error), or Contended.
    let mid = other.try_lock(key).await;
    assert!(
        matches!(
            mid,
            Err(LockError::Contended { .. }) | Err(LockError::Backend { .. })
        ),
        "mid-migration: {:?}",
        mid.map(|g| g.token())
    );
    // A waiting acquire rides out the migration and gets the lock once the holder
    // lets go, after the slot has moved.
    let waiter = other.clone();
    let waiting = tokio::spawn(async move {
        waiter
            .lock(key)
            .lease(Duration::from_secs(30))
            .wait(Duration::from_secs(30))
            .await
    });
    let keys: Vec<String> = cmd(&mut source, &["CLUSTER", "GETKEYSINSLOT", &slot_s, "100"]).await;
    assert!(keys.len() >= 2, "lock and fence live in the slot: {keys:?}");
    let mut migrate = redis::cmd("MIGRATE");
    migrate
        .arg("127.0.0.1")
        .arg(target_port)
        .arg("")
        .arg(0)
        .arg(5000)
        .arg("KEYS")
        .arg(&keys);
    let _: String = migrate.query_async(&mut source).await.unwrap();
    for port in &ports {
        let mut c = node(*port).await;
        let _: () = cmd(&mut c, &["CLUSTER", "SETSLOT", &slot_s, "NODE", &target_id]).await;
    }
    assert_eq!(owner_of(&mut any, slot).await, target_port);

    // The clients' slot maps are stale: each request is redirected (MOVED) and
    // still lands on the lock.
    held.extend(Duration::from_secs(30)).await.unwrap();
    let third = Locker::new(driver(&url).await);
    assert!(matches!(
        third.try_lock(key).await,
        Err(LockError::Contended { .. })
    ));
    held.release().await.unwrap();
    let next = waiting.await.unwrap().unwrap();
    assert!(
        next.token() > first_token,
        "the fencing counter moved with the slot: {} then {}",
        first_token,
        next.token()
    );
    next.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchdog_keeps_locks_in_many_slots_past_their_ttl() {
    let cluster = RedisCluster::start(3).await.unwrap();
    let url = cluster.url();
    let holder = Locker::new(driver(&url).await);
    let other = Locker::new(driver(&url).await);
    let ttl = Duration::from_millis(600);
    let mut guards = Vec::new();
    for i in 0..60 {
        guards.push(
            holder
                .lock(format!("many/{i}"))
                .ttl(ttl)
                .no_wait()
                .await
                .unwrap(),
        );
    }
    // Three TTLs: without renewals every lock would have expired twice over.
    let ports: Vec<u16> = cluster.nodes.iter().map(|n| n.port()).collect();
    watch_renewals(&ports, 60, Instant::now() + ttl * 3).await;
    for (i, g) in guards.iter().enumerate() {
        assert!(!g.is_lost(), "lock {i} was lost");
        assert!(matches!(
            other.try_lock(format!("many/{i}")).await,
            Err(LockError::Contended { .. })
        ));
    }
    for g in guards {
        g.release().await.unwrap();
    }
}

/// Watches the locks `many/0..count` on the cluster until `until` has passed and
/// each has been seen renewed twice (its remaining lease going back up); every
/// lock must exist at every look.
async fn watch_renewals(ports: &[u16], count: usize, until: Instant) {
    let seeds: Vec<String> = ports
        .iter()
        .map(|p| format!("redis://127.0.0.1:{p}"))
        .collect();
    let mut conn = redis::cluster::ClusterClientBuilder::new(seeds)
        .response_timeout(Duration::from_secs(10))
        .build()
        .unwrap()
        .get_async_connection()
        .await
        .unwrap();
    let keys: Vec<String> = (0..count)
        .map(|i| format!("lockkit:{{many/{i}}}:lock"))
        .collect();
    let (mut last, mut renewals) = (vec![i64::MAX; count], vec![0; count]);
    let deadline = until + Duration::from_secs(20);
    while Instant::now() < until || renewals.iter().any(|&r| r < 2) {
        assert!(Instant::now() < deadline, "renewals seen: {renewals:?}");
        for (i, key) in keys.iter().enumerate() {
            let left: i64 = redis::cmd("PTTL")
                .arg(key)
                .query_async(&mut conn)
                .await
                .unwrap();
            assert!(left > 0, "lock {i} expired (PTTL {left})");
            if left > last[i] {
                renewals[i] += 1;
            }
            last[i] = left;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_driver_follows_a_failover_to_the_promoted_replica() {
    let mut cluster = RedisCluster::start_replicated(3, 1).await.unwrap();
    let url = cluster.url();
    let (a, b) = (
        Locker::new(driver(&url).await),
        Locker::new(driver(&url).await),
    );
    // Held under the watchdog, with a waiter queued, while the master dies; the
    // lease outlasts the failover (the 2 s node timeout, then the vote, slower on
    // a loaded machine), during which the slot is served by no one.
    let held = a
        .lock("orders")
        .ttl(Duration::from_secs(30))
        .no_wait()
        .await
        .unwrap();
    let waiter = {
        let b = b.clone();
        tokio::spawn(async move { b.lock("orders").wait(Duration::from_secs(30)).await })
    };
    lockkit_conformance::until_waiters(&a, "orders", 1, Duration::from_secs(30))
        .await
        .unwrap();

    cluster
        .fail_over_master_of("lockkit:{orders}:lock", Duration::from_secs(30))
        .await
        .unwrap();

    // The same lockers, no reconnect by hand: the replicated hold is renewed on
    // the promoted replica, and its release there wakes the waiter, whose token
    // the replicated counter keeps rising.
    lockkit_conformance::until_ok(Duration::from_secs(30), || {
        held.extend(Duration::from_secs(5))
    })
    .await
    .expect("the hold is not renewed within 30 s of the failover");
    assert!(!held.is_lost());
    let token = held.token();
    held.release().await.unwrap();
    let handed = waiter.await.unwrap().unwrap();
    assert!(handed.token() > token, "{} after {token}", handed.token());
    handed.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_replicas_waits_on_the_master_of_the_locks_slot() {
    let cluster = RedisCluster::start_replicated(3, 1).await.unwrap();
    let url = cluster.url();
    // Each master has one replica: one acknowledges every grant and renewal, in
    // whichever slot the lock lives. How fast is not the point: a loaded 2-core
    // machine has kept an acknowledgment past the 500 ms default.
    let one = Locker::new(driver(&format!("{url}?wait_replicas=1&wait_timeout_ms=5000")).await);
    for i in 0..6 {
        let held = one.try_lock(format!("spread/{i}")).await.unwrap();
        held.extend(Duration::from_secs(5)).await.unwrap();
        held.release().await.unwrap();
    }
    // Two never do: the grant is refused, and given back.
    let two = Locker::new(driver(&format!("{url}?wait_replicas=2&wait_timeout_ms=100")).await);
    match two.try_lock("spread/0").await {
        Err(e) => assert!(e.to_string().contains("wait_replicas"), "{e}"),
        Ok(g) => panic!("granted with 1 of 2 replicas: token {}", g.token()),
    }
    one.try_lock("spread/0")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();

    // With the replica of one master cut off, the locks in its slots are refused,
    // and those another master serves are not.
    let mut cluster = cluster;
    let cut = cluster.cut_replicas_of("lockkit:{cut}:lock").await.unwrap();
    let short = Locker::new(driver(&format!("{url}?wait_replicas=1&wait_timeout_ms=100")).await);
    assert!(short.try_lock("cut").await.is_err(), "granted unreplicated");
    let mut any = node(cluster.nodes[0].port()).await;
    let mut elsewhere = None;
    for i in 0..50 {
        let key = format!("elsewhere/{i}");
        let slot: u16 = cmd(
            &mut any,
            &["CLUSTER", "KEYSLOT", &format!("lockkit:{{{key}}}:lock")],
        )
        .await;
        if owner_of(&mut any, slot).await != cut {
            elsewhere = Some(key);
            break;
        }
    }
    let held = one.try_lock(elsewhere.unwrap()).await.unwrap();
    held.release().await.unwrap();
}
