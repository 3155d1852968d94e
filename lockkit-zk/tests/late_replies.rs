//! Replies that come late, past the client's 400 ms without an answer (2/5 of
//! the 1 s sessions asked for) but well within the session: a one-shot request
//! (a `try_lock`, a release) tries again once the client has reconnected, and
//! does not fail. The real ZooKeeper 3.8 is paused (SIGSTOP) for 500 ms.

mod common;

use std::time::Duration;

use lockkit_core::LockError;
use lockkit_testkit::ZooKeeper;
use tokio::time::{sleep, timeout};
use zookeeper_client::Client;

use common::one_holds_of_two;

/// How long the server is paused: past the client's 400 ms, within the session.
const STALL: Duration = Duration::from_millis(500);

/// The nodes in `key`'s queue, read by a client of our own.
async fn queue_len(zk: &ZooKeeper, key: &str) -> Result<usize, zookeeper_client::Error> {
    let raw = Client::connect(&format!("127.0.0.1:{}", zk.port())).await?;
    match raw.list_children(&format!("/lockkit/{key}")).await {
        Ok(children) => Ok(children.len()),
        Err(zookeeper_client::Error::NoNode) => Ok(0),
        Err(e) => Err(e),
    }
}

/// A `try_lock` whose request meets the stalled server does not fail with a
/// connection error: it tries again within its patience, finds the lock held
/// and says so, and leaves no node behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_try_lock_rides_out_a_server_that_answers_late() {
    let zk = ZooKeeper::start().await.unwrap();
    let (_holder, other, held) = one_holds_of_two(&zk, "late").await.unwrap();
    zk.pause();
    let attempt = tokio::spawn(async move { other.try_lock("late").await });
    // The stall itself (a fault of known length), not a wait for a state.
    sleep(STALL).await;
    zk.resume();
    let got = timeout(Duration::from_secs(10), attempt)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(got, Err(LockError::Contended { .. })), "{got:?}");
    assert_eq!(queue_len(&zk, "late").await.unwrap(), 1);
    held.release().await.unwrap();
}

/// A release whose delete meets the stalled server does not fail with a
/// connection error: it sends the delete again once the client has reconnected,
/// reports the hold released, and the lock is free for another client at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_rides_out_a_server_that_answers_late() {
    let zk = ZooKeeper::start().await.unwrap();
    let (_holder, other, held) = one_holds_of_two(&zk, "late-release").await.unwrap();
    zk.pause();
    let release = tokio::spawn(held.release());
    // The stall itself (a fault of known length), not a wait for a state.
    sleep(STALL).await;
    zk.resume();
    let released = timeout(Duration::from_secs(10), release)
        .await
        .unwrap()
        .unwrap();
    assert!(released.is_ok(), "{released:?}");
    assert_eq!(queue_len(&zk, "late-release").await.unwrap(), 0);
    other
        .try_lock("late-release")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}

/// An inspection (reads only) whose requests meet the stalled server reads
/// again once the client has reconnected: it shows the holder, not an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inspection_rides_out_a_server_that_answers_late() {
    let zk = ZooKeeper::start().await.unwrap();
    let (_holder, other, held) = one_holds_of_two(&zk, "late-inspect").await.unwrap();
    zk.pause();
    let inspection = tokio::spawn(async move { other.inspect("late-inspect").await });
    // The stall itself (a fault of known length), not a wait for a state.
    sleep(STALL).await;
    zk.resume();
    let seen = timeout(Duration::from_secs(10), inspection)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(seen.holders.len(), 1, "{seen:?}");
    assert_eq!(seen.holders[0].token, held.token());
    held.release().await.unwrap();
}
