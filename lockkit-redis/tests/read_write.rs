//! Read-write locks on a real Redis server and a real 3-master Cluster: a reader
//! never overtakes a writer queued before it, a release wakes exactly the waiters
//! it admits (counted in PUBLISH calls, which only a release, a force-release or a
//! leave makes), and each reader's hold has its own lease.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit_conformance::until;
use lockkit_core::driver::acquire;
use lockkit_core::{
    AcquireRequest, LockError, LockGuard, LockKey, LockMode, Locker, OwnerId, Wait,
};
use lockkit_redis::{RedisDriver, RedisOptions};
use lockkit_testkit::{Redis, RedisCluster};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

mod common;
use common::{admin, locker, publishes, until_queued};

/// How long any wait in these tests may take before it counts as a failure.
const LIMIT: Duration = Duration::from_secs(20);

/// A server or a cluster, with an admin connection to each master.
struct Target {
    url: String,
    nodes: Vec<redis::aio::MultiplexedConnection>,
    _single: Option<Redis>,
    _cluster: Option<RedisCluster>,
}

impl Target {
    async fn single() -> Self {
        let server = Redis::start().await.unwrap();
        Self {
            url: server.url(),
            nodes: vec![node(&server).await],
            _single: Some(server),
            _cluster: None,
        }
    }

    async fn cluster() -> Self {
        let cluster = RedisCluster::start(3).await.unwrap();
        let mut nodes = Vec::new();
        for server in &cluster.nodes {
            nodes.push(node(server).await);
        }
        Self {
            url: cluster.url(),
            nodes,
            _single: None,
            _cluster: Some(cluster),
        }
    }
}

async fn node(server: &Redis) -> redis::aio::MultiplexedConnection {
    admin(&redis::Client::open(server.url()).unwrap()).await
}

/// A read or write lock waited for on its own task (its own driver, as a separate
/// process would): the guard comes back on `granted`, tagged with `name`.
fn queue_up(
    locker: Locker,
    key: &'static str,
    mode: LockMode,
    name: &'static str,
    granted: mpsc::UnboundedSender<(&'static str, LockGuard)>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let request = match mode {
            LockMode::Shared => locker.read_lock(key),
            _ => locker.write_lock(key),
        };
        let guard = request.wait(LIMIT).await.unwrap();
        granted.send((name, guard)).unwrap();
    })
}

type Grants = mpsc::UnboundedReceiver<(&'static str, LockGuard)>;

/// Waits for the next grant, whoever's.
async fn next_any(granted: &mut Grants) -> (&'static str, LockGuard) {
    tokio::time::timeout(LIMIT, granted.recv())
        .await
        .expect("a grant in time")
        .unwrap()
}

/// Waits for the next grant; it must be `name`'s.
async fn next_grant(granted: &mut Grants, name: &str) -> LockGuard {
    let (who, guard) = next_any(granted).await;
    assert_eq!(who, name, "granted out of order");
    guard
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_never_overtakes_a_queued_writer() {
    reader_stays_behind_a_queued_writer(Target::single().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_never_overtakes_a_queued_writer_on_a_cluster() {
    reader_stays_behind_a_queued_writer(Target::cluster().await).await;
}

async fn reader_stays_behind_a_queued_writer(mut target: Target) {
    let (url, conn) = (target.url.clone(), &mut target.nodes[..]);
    let key = "stock";
    let first = locker(&url).await;
    let read = first.read_lock(key).no_wait().await.unwrap();

    let (tx, mut granted) = mpsc::unbounded_channel();
    queue_up(
        locker(&url).await,
        key,
        LockMode::Exclusive,
        "writer",
        tx.clone(),
    );
    until_queued(conn, key, 1).await;
    // Only a reader holds, yet a new reader is refused: a writer is queued.
    let late = locker(&url).await;
    assert!(matches!(
        late.read_lock(key).no_wait().await,
        Err(LockError::Contended { .. })
    ));
    queue_up(late, key, LockMode::Shared, "reader", tx);
    until_queued(conn, key, 2).await;

    let read_token = read.token();
    read.release().await.unwrap();
    let write = next_grant(&mut granted, "writer").await;
    assert!(write.token() > read_token);
    let seen = first.inspect(key).await.unwrap();
    assert_eq!(seen.holders.len(), 1);
    assert_eq!(seen.holders[0].mode, LockMode::Exclusive);
    assert_eq!(seen.waiters, Some(1), "the reader still waits");
    let write_token = write.token();
    write.release().await.unwrap();
    let reader = next_grant(&mut granted, "reader").await;
    assert!(reader.token() > write_token);
    reader.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_wakes_the_readers_up_to_the_next_writer_and_no_one_else() {
    release_wakes_whom_it_admits(Target::single().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_wakes_whom_it_admits_on_a_cluster() {
    release_wakes_whom_it_admits(Target::cluster().await).await;
}

async fn release_wakes_whom_it_admits(mut target: Target) {
    let (url, conn) = (target.url.clone(), &mut target.nodes[..]);
    let key = "catalog";
    let holder = locker(&url).await;
    let write = holder.write_lock(key).no_wait().await.unwrap();

    // Queued in this order: r1, r2, w3, r4.
    let (tx, mut granted) = mpsc::unbounded_channel();
    let order = [
        ("r1", LockMode::Shared),
        ("r2", LockMode::Shared),
        ("w3", LockMode::Exclusive),
        ("r4", LockMode::Shared),
    ];
    for (n, (name, mode)) in order.into_iter().enumerate() {
        queue_up(locker(&url).await, key, mode, name, tx.clone());
        until_queued(conn, key, n + 1).await;
    }

    // The writer's release wakes r1 and r2, not w3 or r4.
    let before = publishes(conn).await;
    write.release().await.unwrap();
    let (a, ga) = next_any(&mut granted).await;
    let (b, gb) = next_any(&mut granted).await;
    let mut readers = [a, b];
    readers.sort_unstable();
    assert_eq!(readers, ["r1", "r2"]);
    assert_eq!(publishes(conn).await - before, 2, "one wake-up per reader");
    let seen = holder.inspect(key).await.unwrap();
    assert_eq!(seen.holders.len(), 2);
    assert!(seen.holders.iter().all(|h| h.mode == LockMode::Shared));

    // A reader leaving while another holds wakes nobody; the last one wakes w3.
    let before = publishes(conn).await;
    ga.release().await.unwrap();
    assert_eq!(publishes(conn).await - before, 0);
    gb.release().await.unwrap();
    let w3 = next_grant(&mut granted, "w3").await;
    assert_eq!(publishes(conn).await - before, 1);

    // w3's release wakes r4.
    let before = publishes(conn).await;
    let w3_token = w3.token();
    w3.release().await.unwrap();
    let r4 = next_grant(&mut granted, "r4").await;
    assert_eq!(publishes(conn).await - before, 1);
    assert!(r4.token() > w3_token);
    r4.release().await.unwrap();
    until_queued(conn, key, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_readers_lease_ends_alone_and_pins_nothing() {
    let server = Redis::start().await.unwrap();
    let url = server.url();
    let key = "report";
    // A reader that crashes: its hold is never released or renewed.
    let crashed = RedisDriver::connect(RedisOptions::from_url(&url).unwrap())
        .await
        .unwrap();
    let lease = Duration::from_millis(500);
    let request = AcquireRequest::new(
        LockKey::new(key).unwrap(),
        OwnerId::new(),
        lease,
        Wait::NoWait,
    )
    .with_mode(LockMode::Shared);
    acquire(&crashed, &request).await.unwrap();
    let live = locker(&url).await;
    let read = live.read_lock(key).no_wait().await.unwrap();
    assert_eq!(live.inspect(key).await.unwrap().holders.len(), 2);

    // The crashed reader's lease ends; the live reader's hold stays, and still
    // keeps writers out.
    until("the crashed reader's hold ends", LIMIT, || async {
        live.inspect(key).await.unwrap().holders.len() == 1
    })
    .await
    .unwrap();
    assert!(!read.is_lost());
    let writer = locker(&url).await;
    assert!(matches!(
        writer.write_lock(key).no_wait().await,
        Err(LockError::Contended { .. })
    ));
    let read_token = read.token();
    read.release().await.unwrap();
    let write = writer.write_lock(key).no_wait().await.unwrap();
    assert!(write.token() > read_token);
    write.release().await.unwrap();
}
