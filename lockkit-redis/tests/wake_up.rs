//! How waiters are woken on a real Redis server: one release wakes one waiter (no
//! herd), and the waiters set never leaves a live waiter stranded behind one that
//! left or died.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::{AcquireRequest, LockDriver, LockKey, Locker, OwnerId, Wait};
use lockkit_redis::{RedisDriver, RedisOptions};
use lockkit_testkit::Redis;
use tokio::time::Instant;

mod common;
use common::script_calls;

/// How long a waiter goes without a wake-up before retrying anyway (the driver's
/// fallback poll). A hand-off much faster than this came from a wake-up.
const FALLBACK: Duration = Duration::from_secs(1);

async fn driver(url: &str) -> Arc<RedisDriver> {
    Arc::new(
        RedisDriver::connect(RedisOptions::from_url(url).unwrap())
            .await
            .unwrap(),
    )
}

async fn admin(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection_with_config(&common::admin_config())
        .await
        .unwrap()
}

/// Waits (bounded) until `n` waiters are queued for `key`.
async fn until_queued(conn: &mut redis::aio::MultiplexedConnection, key: &str, n: usize) {
    let set = format!("lockkit:{{{key}}}:waiters");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let queued: usize = redis::cmd("ZCARD")
            .arg(&set)
            .query_async(conn)
            .await
            .unwrap();
        if queued == n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{queued} waiters queued, expected {n}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A lock call running on its own task: resolves to when it was granted.
fn waiting(locker: Locker, key: &'static str) -> tokio::task::JoinHandle<Instant> {
    tokio::spawn(async move {
        let g = locker
            .lock(key)
            .lease(Duration::from_secs(30))
            .wait(Duration::from_secs(30))
            .await
            .unwrap();
        let at = Instant::now();
        g.release().await.unwrap();
        at
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_release_wakes_one_waiter_not_a_herd() {
    const WAITERS: usize = 20;
    let server = Redis::start().await.unwrap();
    let url = server.url();
    let mut conn = admin(&url).await;
    let key = "herd";
    let holder = Locker::new(driver(&url).await);
    // Every waiter has its own driver (its own connections), as separate processes.
    let mut lockers = Vec::new();
    for _ in 0..WAITERS {
        lockers.push(Locker::new(driver(&url).await));
    }

    // A round is conclusive only if it ends before any waiter's fallback retry
    // could have come due; on a machine too slow for that, it is run again.
    for round in 0..3 {
        let held = holder
            .lock(key)
            .lease(Duration::from_secs(30))
            .no_wait()
            .await
            .unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut tasks = Vec::new();
        let queued_from = Instant::now();
        for locker in lockers.clone() {
            let tx = tx.clone();
            tasks.push(tokio::spawn(async move {
                let g = locker
                    .lock(key)
                    .lease(Duration::from_secs(30))
                    .wait(Duration::from_secs(60))
                    .await
                    .unwrap();
                tx.send(()).unwrap();
                g
            }));
        }
        until_queued(&mut conn, key, WAITERS).await;

        let before = script_calls(&mut conn).await;
        held.release().await.unwrap();
        rx.recv().await.unwrap();
        let after = script_calls(&mut conn).await;
        let queued_after: usize = redis::cmd("ZCARD")
            .arg(format!("lockkit:{{{key}}}:waiters"))
            .query_async(&mut conn)
            .await
            .unwrap();
        let conclusive = queued_from.elapsed() < FALLBACK;

        // Let the rest through, one release at a time.
        let mut granted = 1;
        let mut pending = tasks;
        while !pending.is_empty() {
            let (g, _, rest) = futures_util::future::select_all(pending).await;
            g.unwrap().release().await.unwrap();
            pending = rest;
            if granted < WAITERS {
                rx.recv().await.unwrap();
                granted += 1;
            }
        }
        if !conclusive {
            eprintln!("round {round} took longer than the fallback poll; running it again");
            continue;
        }
        // The release and the woken waiter's grant: nobody else retried.
        assert!(
            after - before <= 2,
            "{} script calls for one hand-off with {WAITERS} waiters",
            after - before
        );
        assert_eq!(
            queued_after,
            WAITERS - 1,
            "the woken waiter left the queue, the others stayed"
        );
        return;
    }
    panic!("no round finished within the fallback poll interval ({FALLBACK:?})");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_out_waiter_leaves_the_queue() {
    let server = Redis::start().await.unwrap();
    let url = server.url();
    let mut conn = admin(&url).await;
    let key = "leaving";
    let holder = Locker::new(driver(&url).await);
    let held = holder.lock(key).no_wait().await.unwrap();

    // The first waiter gives up while the lock is still held.
    let quitter = Locker::new(driver(&url).await);
    let gave_up = tokio::spawn(async move {
        quitter
            .lock(key)
            .wait(Duration::from_millis(300))
            .await
            .map(|_| ())
    });
    until_queued(&mut conn, key, 1).await;
    let patient = waiting(Locker::new(driver(&url).await), key);
    until_queued(&mut conn, key, 2).await;
    assert!(matches!(
        gave_up.await.unwrap(),
        Err(lockkit_core::LockError::Timeout { .. })
    ));
    until_queued(&mut conn, key, 1).await;

    // The release wakes the waiter that is still there, not the one that left.
    let released = Instant::now();
    held.release().await.unwrap();
    let granted = patient.await.unwrap();
    let handoff = granted - released;
    assert!(
        handoff < FALLBACK / 2,
        "hand-off took {handoff:?}: the waiter was not woken (fallback is {FALLBACK:?})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_skips_waiters_whose_driver_is_gone() {
    let server = Redis::start().await.unwrap();
    let url = server.url();
    let mut conn = admin(&url).await;
    let key = "stranded";
    let holder = Locker::new(driver(&url).await);
    let held = holder.lock(key).no_wait().await.unwrap();

    // A waiter whose process dies: its entry stays behind (no leave) until it expires.
    let doomed = driver(&url).await;
    let req = AcquireRequest::new(
        LockKey::new(key).unwrap(),
        OwnerId::new(),
        Duration::from_secs(30),
        Wait::Forever,
    );
    let dying = tokio::spawn(async move {
        let _ = doomed.acquire(&req).await;
    });
    until_queued(&mut conn, key, 1).await;
    dying.abort();
    let _ = dying.await;
    // Its wake-up connection is closed once the server has dropped its subscription.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let channels: Vec<String> = redis::cmd("PUBSUB")
            .arg("CHANNELS")
            .arg("lockkit:wake:*")
            .query_async(&mut conn)
            .await
            .unwrap();
        if channels.len() == 1 {
            break; // only the holder's driver is left
        }
        assert!(Instant::now() < deadline, "subscriptions: {channels:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    let survivor = waiting(Locker::new(driver(&url).await), key);
    until_queued(&mut conn, key, 2).await;
    let released = Instant::now();
    held.release().await.unwrap();
    let granted = survivor.await.unwrap();
    let handoff = granted - released;
    assert!(
        handoff < FALLBACK / 2,
        "hand-off took {handoff:?}: the release woke the dead waiter only"
    );
}
