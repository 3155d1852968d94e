//! Figures for the issue note, against one throwaway Redis. Ignored by default
//! (they measure, they do not check); run in release with
//! `cargo nextest run --release -p lockkit-redis --test measure --run-ignored only --no-capture`.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

mod common;
use common::publishes;

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::Locker;
use lockkit_redis::{RedisDriver, RedisOptions};
use lockkit_testkit::Redis;
use tokio::time::Instant;

const ROUNDS: usize = 2000;

fn p50_p99(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    let at = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    (at(0.50), at(0.99))
}

async fn locker(url: &str) -> Locker {
    let driver = RedisDriver::connect(RedisOptions::from_url(url).unwrap())
        .await
        .unwrap();
    Locker::new(Arc::new(driver))
}

/// Uncontended lock+release and permit acquire+release (limit 4), alternating pair
/// by pair on one connection, so drift in the machine's load hits both alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run with --run-ignored only --no-capture"]
async fn permit_against_lock_uncontended() {
    let redis = Redis::start().await.unwrap();
    let locker = locker(&redis.url()).await;
    let pool = locker.semaphore("pool", 4);
    let (mut lock, mut permit) = (Vec::new(), Vec::new());
    for i in 0..ROUNDS + 200 {
        let t = Instant::now();
        locker
            .try_lock("lock")
            .await
            .unwrap()
            .release()
            .await
            .unwrap();
        let l = t.elapsed();
        let t = Instant::now();
        pool.try_acquire().await.unwrap().release().await.unwrap();
        let p = t.elapsed();
        if i >= 200 {
            lock.push(l);
            permit.push(p);
        }
    }
    let ((l50, l99), (p50, p99)) = (p50_p99(lock), p50_p99(permit));
    eprintln!("lock+release     p50 {l50:?} p99 {l99:?}");
    eprintln!("permit+release   p50 {p50:?} p99 {p99:?}");
    eprintln!(
        "permit/lock p50 = {:.2}",
        p50.as_secs_f64() / l50.as_secs_f64()
    );
}

/// A semaphore of 4 permits and 16 waiters, each on its own connection: the time
/// from one release returning to the next grant, and the script calls and PUBLISHes
/// per release (one wake-up per release: no herd).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run with --run-ignored only --no-capture"]
async fn semaphore_hand_off_with_16_waiters() {
    const LIMIT: u32 = 4;
    const WAITERS: usize = 16;
    let redis = Redis::start().await.unwrap();
    let client = redis::Client::open(redis.url()).unwrap();
    let mut admin = common::admin(&client).await;
    let mut holders = Vec::new();
    for _ in 0..LIMIT {
        let l = locker(&redis.url()).await;
        holders.push(l.semaphore("pool", LIMIT).try_acquire().await.unwrap());
    }
    let released = Arc::new(tokio::sync::Mutex::new(Vec::<Instant>::new()));
    let granted = Arc::new(tokio::sync::Mutex::new(Vec::<Instant>::new()));
    let mut tasks = Vec::new();
    for _ in 0..WAITERS {
        let l = locker(&redis.url()).await;
        let (released, granted) = (released.clone(), granted.clone());
        tasks.push(tokio::spawn(async move {
            let p = l
                .semaphore("pool", LIMIT)
                .acquire()
                .wait(Duration::from_secs(60))
                .await
                .unwrap();
            granted.lock().await.push(Instant::now());
            tokio::time::sleep(Duration::from_millis(5)).await;
            p.release().await.unwrap();
            released.lock().await.push(Instant::now());
        }));
    }
    // Every waiter has queued (16 live entries) before the first release.
    loop {
        let seen = Locker::new(Arc::new(
            RedisDriver::connect(RedisOptions::from_url(&redis.url()).unwrap())
                .await
                .unwrap(),
        ))
        .inspect("pool")
        .await
        .unwrap();
        if seen.waiters == Some(WAITERS) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let scripts_before = common::script_calls(&mut admin).await;
    let publish_before = publishes(&mut admin).await;
    for h in holders {
        h.release().await.unwrap();
        released.lock().await.push(Instant::now());
    }
    for t in tasks {
        t.await.unwrap();
    }
    let releases = (LIMIT as usize + WAITERS) as f64;
    let scripts = (common::script_calls(&mut admin).await - scripts_before) as f64;
    let publishes = (publishes(&mut admin).await - publish_before) as f64;
    // Each grant's gap: from the latest release before it.
    let (released, granted) = (released.lock().await.clone(), granted.lock().await.clone());
    let mut gaps: Vec<Duration> = granted
        .iter()
        .filter_map(|g| released.iter().filter(|r| *r <= g).max().map(|r| *g - *r))
        .collect();
    gaps.sort();
    let (p50, p99) = p50_p99(gaps);
    eprintln!("hand-off p50 {p50:?} p99 {p99:?} ({WAITERS} waiters, {LIMIT} permits)");
    eprintln!(
        "per release: {:.2} script calls, {:.2} PUBLISH",
        scripts / releases,
        publishes / releases
    );
}
