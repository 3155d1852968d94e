//! Semaphores on a real ZooKeeper server: a permit's release wakes the one waiter
//! it lets in, not the whole queue (counted in the packets the server receives,
//! from its `mntr` command).

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::time::Duration;

use lockkit_conformance::QueuedSemaphore;
use lockkit_core::Locker;
use lockkit_testkit::ZooKeeper;
use lockkit_zk::{ZkDriver, ZkOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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
