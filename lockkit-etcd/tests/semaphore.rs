//! Semaphores on a real etcd server: a permit's release wakes the waiter it lets
//! in, not the whole queue (counted in the gRPC messages the server received and
//! sent, from its `/metrics`).

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit_conformance::QueuedSemaphore;
use lockkit_testkit::Etcd;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const LIMIT: u32 = 4;
const WAITERS: usize = 16;
const WAIT: Duration = Duration::from_secs(30);

/// gRPC messages the server has received and sent so far, over every method
/// (`grpc_server_msg_received_total` and `grpc_server_msg_sent_total`).
async fn grpc_messages(url: &str) -> f64 {
    let host = url.trim_start_matches("etcd://");
    let mut conn = tokio::net::TcpStream::connect(host).await.unwrap();
    let request = format!("GET /metrics HTTP/1.0\r\nHost: {host}\r\n\r\n");
    conn.write_all(request.as_bytes()).await.unwrap();
    let mut out = String::new();
    conn.read_to_string(&mut out).await.unwrap();
    out.lines()
        .filter(|l| {
            l.starts_with("grpc_server_msg_received_total{")
                || l.starts_with("grpc_server_msg_sent_total{")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_release_wakes_one_waiter_not_the_queue() {
    let server = Etcd::start().await.unwrap();
    let url = server.url();
    let key = "pool";
    // Every client on its own driver (its own session), as separate processes.
    let (mut holders, mut waiters) = (Vec::new(), Vec::new());
    for _ in 0..LIMIT {
        holders.push(lockkit::connect(&url).await.unwrap());
    }
    for _ in 0..WAITERS {
        waiters.push(lockkit::connect(&url).await.unwrap());
    }
    let observer = lockkit::connect(&url).await.unwrap();
    let queued = QueuedSemaphore::queue(key, LIMIT, holders, waiters, &observer, WAIT)
        .await
        .unwrap();
    // Every permit comes back and goes to the next waiter, one release at a time,
    // until all have had theirs.
    let before = grpc_messages(&url).await;
    let released = queued.drain().await.unwrap();
    let per_release = (grpc_messages(&url).await - before) / f64::from(released);
    eprintln!("{per_release:.1} gRPC messages per release ({WAITERS} waiters, {LIMIT} permits)");
    // The release, the woken waiter's keep-alive, look and grant, the turn passed
    // on and the next waiter's look and watch: about 11.5 measured, where every
    // waiter watching the queue measured 22.9.
    assert!(
        per_release < 16.0,
        "{per_release:.1} gRPC messages per release with {WAITERS} waiters"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_moved_to_another_lease_keeps_its_limit() {
    let server = Etcd::start().await.unwrap();
    let url = server.url();
    let (a, b) = (
        lockkit::connect(&url).await.unwrap(),
        lockkit::connect(&url).await.unwrap(),
    );
    let held = a
        .semaphore("pool", 3)
        .acquire()
        .ttl(Duration::from_secs(2))
        .no_wait()
        .await
        .unwrap();
    // A longer TTL moves the entry to the lease of that TTL.
    held.extend(Duration::from_secs(20)).await.unwrap();
    let seen = b.inspect("pool").await.unwrap();
    assert_eq!(seen.holders.len(), 1);
    assert_eq!(
        seen.holders[0].mode,
        lockkit_core::LockMode::Permit { limit: 3 }
    );
    // Others still join with the same limit.
    let other = b.semaphore("pool", 3).try_acquire().await.unwrap();
    other.release().await.unwrap();
    held.release().await.unwrap();
}
