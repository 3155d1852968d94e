//! A reply lost after the acquire script ran, on a real Redis server behind the
//! testkit's fault proxy: the script may have queued the waiter, so its next
//! attempt looks for its place, and the grant takes it out of the queue.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit_testkit::{Fault, FaultProxy, Redis};
use tokio::time::timeout;

mod common;
use common::{admin, locker, until_queued};

/// The waiter's first attempt finds the lock held and queues it, but its reply is
/// lost (held by the proxy, then dropped with the connection). Once the lock is
/// free, the waiter is granted and its queue entry goes with the grant: no stale
/// waiter is left for readers to queue behind or `inspect` to count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_queuing_reply_was_lost_leaves_the_queue_when_granted() {
    const KEY: &str = "lost-reply";
    let server = Redis::start().await.unwrap();
    let proxy = FaultProxy::start(server.port()).await.unwrap();
    let mut direct = admin(&redis::Client::open(server.url()).unwrap()).await;
    let holder = locker(&server.url()).await;
    let waiter = locker(&format!(
        "redis://127.0.0.1:{}?request_timeout_ms=200",
        proxy.port()
    ))
    .await;
    let held = holder
        .lock(KEY)
        .lease(Duration::from_secs(30))
        .no_wait()
        .await
        .unwrap();

    proxy.set(Fault::HoldReplies);
    let waiting = tokio::spawn(async move {
        waiter
            .lock(KEY)
            .lease(Duration::from_secs(30))
            .wait(Duration::from_secs(20))
            .await
    });
    // The script ran and queued the waiter; its reply is held.
    until_queued(std::slice::from_mut(&mut direct), KEY, 1).await;
    held.release().await.unwrap();
    proxy.reset();
    proxy.set(Fault::Forward);

    let granted = timeout(Duration::from_secs(20), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    // The grant and the dequeue are one script: read at once, no waiting.
    let queued: usize = redis::cmd("ZCARD")
        .arg(format!("lockkit:{{{KEY}}}:queue"))
        .query_async(&mut direct)
        .await
        .unwrap();
    assert_eq!(queued, 0, "the waiter's entry outlived its grant");
    granted.release().await.unwrap();
}
