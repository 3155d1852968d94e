//! Semaphores on a real ZooKeeper server: a permit's release wakes the one waiter
//! it lets in, not the whole queue (counted in the packets the server receives,
//! from its `mntr` command).

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::{LockGuard, Locker};
use lockkit_testkit::ZooKeeper;
use lockkit_zk::{ZkDriver, ZkOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::{Instant, timeout};

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
    let mut holders = Vec::new();
    for _ in 0..LIMIT {
        let l = locker(&url).await;
        holders.push(l.semaphore(key, LIMIT).try_acquire().await.unwrap());
    }
    // Every waiter on its own session, as separate processes would be.
    let (tx, mut granted) = mpsc::unbounded_channel::<LockGuard>();
    for _ in 0..WAITERS {
        let (l, tx) = (locker(&url).await, tx.clone());
        tokio::spawn(async move {
            let g = l.semaphore(key, LIMIT).acquire().wait(WAIT).await.unwrap();
            tx.send(g).unwrap();
        });
    }
    let observer = locker(&url).await;
    let deadline = Instant::now() + WAIT;
    while observer.inspect(key).await.unwrap().waiters != Some(WAITERS) {
        assert!(Instant::now() < deadline, "the waiters did not all queue");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // Every permit comes back and goes to the next waiter, one release at a time,
    // until all have had theirs: the packets the server received per release.
    let before = packets_received(&server.address()).await;
    let mut released = 0;
    for h in holders {
        h.release().await.unwrap();
        released += 1;
    }
    for _ in 0..WAITERS {
        let g = timeout(WAIT, granted.recv()).await.unwrap().unwrap();
        g.release().await.unwrap();
        released += 1;
    }
    let per_release = (packets_received(&server.address()).await - before) as f64 / released as f64;
    eprintln!("{per_release:.1} packets received per release ({WAITERS} waiters, {LIMIT} permits)");
    // Each release, the woken waiter's look, grant and watch, the turn passed to
    // the next waiter and its look: a handful, where waking the queue would cost a
    // packet or two per waiter still queued (8 on average here).
    assert!(
        per_release < 8.0,
        "{per_release:.1} packets per release with {WAITERS} waiters"
    );
}
