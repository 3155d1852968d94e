//! How waiters are woken on a real Redis server: one release wakes one waiter (no
//! herd), and the waiters set never leaves a live waiter stranded behind one that
//! left or died.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit_core::driver::acquire;
use lockkit_core::{AcquireRequest, LockKey, Locker, OwnerId, Wait};
use lockkit_testkit::{LogCapture, Redis};
use tokio::time::Instant;

mod common;
use common::{driver, script_calls, until_queued};

/// How long a waiter goes without a wake-up before retrying anyway (the driver's
/// fallback poll). A hand-off much faster than this came from a wake-up.
const FALLBACK: Duration = Duration::from_secs(1);

async fn admin(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection_with_config(&common::admin_config())
        .await
        .unwrap()
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
        until_queued(std::slice::from_mut(&mut conn), key, WAITERS).await;

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
    until_queued(std::slice::from_mut(&mut conn), key, 1).await;
    let patient = waiting(Locker::new(driver(&url).await), key);
    until_queued(std::slice::from_mut(&mut conn), key, 2).await;
    assert!(matches!(
        gave_up.await.unwrap(),
        Err(lockkit_core::LockError::Timeout { .. })
    ));
    until_queued(std::slice::from_mut(&mut conn), key, 1).await;

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

    // A waiter whose process died: its entry stays behind (it never left) until it
    // expires, and nobody listens on its driver's channel.
    let time: (String, String) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
    let expires = time.0.parse::<u64>().unwrap() * 1000 + 30_000;
    let dead = "0123456789abcdef:1:X";
    redis::pipe()
        .cmd("ZADD")
        .arg(format!("lockkit:{{{key}}}:queue"))
        .arg(1)
        .arg(dead)
        .cmd("ZADD")
        .arg(format!("lockkit:{{{key}}}:waiters"))
        .arg(expires)
        .arg(dead)
        .exec_async(&mut conn)
        .await
        .unwrap();

    let survivor = waiting(Locker::new(driver(&url).await), key);
    until_queued(std::slice::from_mut(&mut conn), key, 2).await;
    let released = Instant::now();
    held.release().await.unwrap();
    let granted = survivor.await.unwrap();
    let handoff = granted - released;
    assert!(
        handoff < FALLBACK / 2,
        "hand-off took {handoff:?}: the release woke the dead waiter only"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_acquire_leaves_the_queue_at_once() {
    let server = Redis::start().await.unwrap();
    let url = server.url();
    let mut conn = admin(&url).await;
    let key = "abandoned";
    let holder = Locker::new(driver(&url).await);
    let held = holder.read_lock(key).no_wait().await.unwrap();

    // A writer's acquire on the driver itself (a `Locker` cancels its own, see
    // `lockkit_core::client`), dropped by its caller while it waits: its place would
    // keep readers out until its entry expired.
    let writer = driver(&url).await;
    let req = AcquireRequest::new(
        LockKey::new(key).unwrap(),
        OwnerId::new(),
        Duration::from_secs(30),
        Wait::Forever,
    );
    let waiting = tokio::spawn(async move { acquire(&*writer, &req).await });
    until_queued(std::slice::from_mut(&mut conn), key, 1).await;
    let dropped = Instant::now();
    waiting.abort();
    let _ = waiting.await;
    until_queued(std::slice::from_mut(&mut conn), key, 0).await;
    let gone = dropped.elapsed();
    // The entry would have lived 3 s (its lifetime) without a leave.
    assert!(gone < Duration::from_secs(2), "the place was kept {gone:?}");
    let reader = Locker::new(driver(&url).await);
    reader
        .read_lock(key)
        .no_wait()
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    held.release().await.unwrap();
}

/// The wake-up subscription goes with the server. That is logged once, as a
/// warning, however often the driver tries to subscribe again while the server
/// is down, and its return once, at info; then locking works again. Only this
/// test's lines count: a neighbour's driver may warn too.
#[test]
fn a_lost_wake_up_connection_is_logged_once_and_so_is_its_return() {
    let logs = LogCapture::start();
    logs.block_on(async {
        let mut server = Redis::start().await.unwrap();
        let locker = Locker::new(driver(&server.url()).await);
        server.kill();
        assert!(
            logs.logged_within("wake-ups lost", Duration::from_secs(10))
                .await,
            "no warning within 10 s of the kill"
        );
        // The condition under test: down long enough for the driver to try
        // again (after 50, 100, 200, 400 and 800 ms).
        tokio::time::sleep(Duration::from_millis(1500)).await;
        server.restart().await.unwrap();
        assert!(
            logs.logged_within("wake-ups back", Duration::from_secs(10))
                .await,
            "not back within 10 s of the restart"
        );
        assert_eq!(logs.one_outage("the pub/sub connection is down"), Ok(()));
        let g = locker
            .lock("after-restart")
            .wait(Duration::from_secs(10))
            .await
            .unwrap();
        g.release().await.unwrap();
    })
    .unwrap();
}
