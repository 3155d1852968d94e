//! Semaphores on a real ZooKeeper server: a permit's release wakes the one waiter
//! it lets in, not the whole queue (counted in the packets the server receives,
//! from its `mntr` command).

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::time::Duration;

use lockkit_conformance::QueuedSemaphore;
use lockkit_core::driver::acquire;
use lockkit_core::{
    AcquireRequest, LockDriver, LockError, LockKey, LockMode, Locker, OwnerId, Wait,
};
use lockkit_testkit::ZooKeeper;
use lockkit_zk::{ZkDriver, ZkOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::timeout;

const LIMIT: u32 = 4;
const WAITERS: usize = 16;
const WAIT: Duration = Duration::from_secs(20);

async fn locker(url: &str) -> Locker {
    Locker::new(Arc::new(
        ZkDriver::connect(ZkOptions::from_url(url).unwrap())
            .await
            .unwrap(),
    ))
}

/// The packets the server has received so far (`mntr`: `zk_packets_received`).
async fn packets_received(address: &str) -> u64 {
    let mut conn = tokio::net::TcpStream::connect(address).await.unwrap();
    conn.write_all(b"mntr").await.unwrap();
    let mut out = String::new();
    conn.read_to_string(&mut out).await.unwrap();
    out.lines()
        .find_map(|l| l.strip_prefix("zk_packets_received"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no zk_packets_received in mntr: {out}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_release_wakes_one_waiter_not_the_queue() {
    let server = ZooKeeper::start().await.unwrap();
    let url = server.url();
    let key = "pool";
    // Every client on its own driver (its own session), as separate processes.
    let (mut holders, mut waiters) = (Vec::new(), Vec::new());
    for _ in 0..LIMIT {
        holders.push(locker(&url).await);
    }
    for _ in 0..WAITERS {
        waiters.push(locker(&url).await);
    }
    let observer = locker(&url).await;
    let queued = QueuedSemaphore::queue(key, LIMIT, holders, waiters, &observer, WAIT)
        .await
        .unwrap();
    // Every permit comes back and goes to the next waiter, one release at a time,
    // until all have had theirs.
    let before = packets_received(&server.address()).await;
    let released = queued.drain().await.unwrap();
    let per_release =
        (packets_received(&server.address()).await - before) as f64 / f64::from(released);
    eprintln!("{per_release:.1} packets received per release ({WAITERS} waiters, {LIMIT} permits)");
    // Each release, the woken waiter's look, grant and watch, the turn passed to
    // the next waiter and its look: a handful, where waking the queue would cost a
    // packet or two per waiter still queued (8 on average here).
    assert!(
        per_release < 8.0,
        "{per_release:.1} packets per release with {WAITERS} waiters"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_holder_cannot_take_the_key_in_another_mode() {
    let server = ZooKeeper::start().await.unwrap();
    // On the driver itself: a `Locker` refuses these before asking it.
    let driver = ZkDriver::connect(ZkOptions::from_url(&server.url()).unwrap())
        .await
        .unwrap();
    let (key, owner) = (LockKey::new("pool").unwrap(), OwnerId::new());
    let ask = |mode| {
        AcquireRequest::new(
            key.clone(),
            owner.clone(),
            Duration::from_secs(5),
            Wait::NoWait,
        )
        .with_mode(mode)
    };
    acquire(&driver, &ask(LockMode::Permit { limit: 3 }))
        .await
        .unwrap();
    for mode in [
        LockMode::Exclusive,
        LockMode::Shared,
        LockMode::Permit { limit: 5 },
    ] {
        let again = acquire(&driver, &ask(mode)).await;
        assert!(
            matches!(again, Err(LockError::Config(_))),
            "{mode}: {again:?}"
        );
    }
    let seen = driver.inspect(&key).await.unwrap();
    assert_eq!(seen.holders.len(), 1);
    assert_eq!(seen.holders[0].mode, LockMode::Permit { limit: 3 });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_granted_after_waiting_still_learns_of_its_deletion() {
    let server = ZooKeeper::start().await.unwrap();
    let url = server.url();
    let (first, second) = (locker(&url).await, locker(&url).await);
    let held = first.semaphore("pool", 1).try_acquire().await.unwrap();
    let waiting = tokio::spawn(async move {
        second
            .semaphore("pool", 1)
            .acquire()
            .wait(WAIT)
            .await
            .unwrap()
    });
    lockkit_conformance::until_waiters(&first, "pool", 1, WAIT)
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    held.release().await.unwrap();
    let granted = waiting.await.unwrap();
    // Its turn is passed on: its node's data was rewritten once.
    let raw = zookeeper_client::Client::connect(&server.address())
        .await
        .unwrap();
    let node = loop {
        let children = raw.list_children("/lockkit/pool").await.unwrap();
        let path = format!("/lockkit/pool/{}", children[0]);
        if raw
            .check_stat(&path)
            .await
            .unwrap()
            .is_some_and(|s| s.version > 0)
        {
            break path;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the turn was not passed on"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    // Deleted behind its back (as force_release does): the holder is told.
    raw.delete(&node, None).await.unwrap();
    timeout(WAIT, granted.lost())
        .await
        .expect("the holder was told its permit is gone");
}
