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

use common::{one_holds_of_two, takes_and_releases};

/// How long the server is paused: past the client's 400 ms, within the session.
const STALL: Duration = Duration::from_millis(500);

/// The nodes in `key`'s queue, read by a client of our own.
async fn queue_len(zk: &ZooKeeper, key: &str) -> Result<usize, zookeeper_client::Error> {
    let raw = Client::connect(&zk.address()).await?;
    match raw.list_children(&format!("/lockkit/{key}")).await {
        Ok(children) => Ok(children.len()),
        Err(zookeeper_client::Error::NoNode) => Ok(0),
        Err(e) => Err(e),
    }
}

/// Runs `request` on its own task while the server is paused for [`STALL`]:
/// its outcome, or `None` if it has none within 10 s of the resume (or its
/// task panicked).
async fn through_a_stall<T: Send + 'static>(
    zk: &ZooKeeper,
    request: impl std::future::Future<Output = T> + Send + 'static,
) -> Option<T> {
    zk.pause();
    let running = tokio::spawn(request);
    // The stall itself (a fault of known length), not a wait for a state.
    sleep(STALL).await;
    zk.resume();
    timeout(Duration::from_secs(10), running).await.ok()?.ok()
}

/// A `try_lock` whose request meets the stalled server does not fail with a
/// connection error: it tries again within its patience, finds the lock held
/// and says so, and leaves no node behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_try_lock_rides_out_a_server_that_answers_late() {
    let zk = ZooKeeper::start().await.unwrap();
    let (_holder, other, held) = one_holds_of_two(&zk, "late").await.unwrap();
    let got = through_a_stall(&zk, async move { other.try_lock("late").await })
        .await
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
    let released = through_a_stall(&zk, held.release()).await.unwrap();
    assert!(released.is_ok(), "{released:?}");
    assert_eq!(queue_len(&zk, "late-release").await.unwrap(), 0);
    takes_and_releases(&other, "late-release").await.unwrap();
}

/// An inspection (reads only) whose requests meet the stalled server reads
/// again once the client has reconnected: it shows the holder, not an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inspection_rides_out_a_server_that_answers_late() {
    let zk = ZooKeeper::start().await.unwrap();
    let (_holder, other, held) = one_holds_of_two(&zk, "late-inspect").await.unwrap();
    let seen = through_a_stall(&zk, async move { other.inspect("late-inspect").await })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(seen.holders.len(), 1, "{seen:?}");
    assert_eq!(seen.holders[0].token, held.token());
    held.release().await.unwrap();
}
