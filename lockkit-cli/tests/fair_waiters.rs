//! Fair waiting across processes (`lockkit run --fair`): a fair waiter whose
//! process is SIGKILLed while queued is skipped, and the next fair waiter gets
//! the key, on a single Redis server (at once: its wake-up finds no subscriber)
//! and on a Redis Cluster (once the dead waiter's entry lapses, within the
//! driver's 3 s entry lifetime and as long again for a woken waiter to come
//! back).

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::process::{Command, Stdio};
use std::time::Duration;

use lockkit::{LockError, Locker};
use rustix::process::{Pid, Signal, kill_process};
use tokio::time::Instant;

/// Waits until `key` has `n` waiters (bounded: 20 s).
async fn until_waiters(locker: &Locker, key: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let seen = locker.inspect(key).await.unwrap().waiters;
        if seen == Some(n) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{key}: {seen:?} waiters, not {n}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn a_killed_fair_waiter_is_skipped(url: &str, within: Duration) {
    let (holder, next) = (
        lockkit::connect(url).await.unwrap(),
        lockkit::connect(url).await.unwrap(),
    );
    let key = "fair-dead-waiter";
    let held = holder.try_lock(key).await.unwrap();
    let mut dead = Command::new(env!("CARGO_BIN_EXE_lockkit"))
        .args(["run", "--url", url, "--key", key, "--fair", "--", "true"])
        .env_remove("LOCKKIT_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    until_waiters(&holder, key, 1).await;
    let pid = Pid::from_raw(i32::try_from(dead.id()).unwrap()).unwrap();
    kill_process(pid, Signal::KILL).unwrap();
    dead.wait().unwrap();

    let waiting =
        tokio::spawn(async move { next.lock(key).fair().wait(Duration::from_secs(30)).await });
    until_waiters(&holder, key, 2).await;
    let released = Instant::now();
    held.release().await.unwrap();
    let granted: Result<_, LockError> = waiting.await.unwrap();
    let took = released.elapsed();
    granted.unwrap().release().await.unwrap();
    assert!(
        took < within,
        "the live waiter waited {took:?} behind the dead one"
    );
    eprintln!("granted {took:?} after the release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_skips_a_killed_fair_waiter_at_once() {
    let redis = lockkit_testkit::Redis::start().await.unwrap();
    a_killed_fair_waiter_is_skipped(&redis.url(), Duration::from_secs(1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster_skips_a_killed_fair_waiter_within_its_entry_lifetime() {
    let cluster = lockkit_testkit::RedisCluster::start(3).await.unwrap();
    a_killed_fair_waiter_is_skipped(&cluster.url(), Duration::from_secs(8)).await;
}
