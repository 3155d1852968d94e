//! `keys=plain` beside the real `SET NX` libraries: redis-py's `Lock` (from PyPI,
//! in `ci/setup`'s virtualenv) and rslock, on one real Redis. Each holds the key
//! `orders` itself; lockkit and the library exclude each other in both directions,
//! and lockkit's inspection shows the library's hold as a foreign holder.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit::{LockError, LockGuard, Locker, Result};
use lockkit_testkit::{ForeignClient, Redis, foreign_program, interop_python};
use tokio::task::JoinHandle;

const WITHIN: Duration = Duration::from_secs(15);

async fn plain(redis: &Redis) -> Locker {
    lockkit::connect(&format!("{}?keys=plain", redis.url()))
        .await
        .unwrap()
}

async fn refused_while_foreign_holds(lockkit: &Locker) {
    match lockkit.try_lock("orders").await {
        Err(LockError::Contended { .. }) => {}
        other => panic!("lockkit granted while the library held: {other:?}"),
    }
    let seen = lockkit.inspect("orders").await.unwrap();
    assert_eq!(seen.holders.len(), 1, "{seen:?}");
    let label = seen.holders[0].label.as_deref().unwrap_or_default();
    assert!(label.contains("not lockkit"), "{seen:?}");
}

fn lock_in_background(lockkit: &Locker) -> JoinHandle<Result<LockGuard>> {
    let lockkit = lockkit.clone();
    tokio::spawn(async move { lockkit.lock("orders").wait(WITHIN).await })
}

/// The lock key holds lockkit's own value (`owner:token…`), not the library's.
async fn lockkit_value_stands(redis: &Redis, guard: &LockGuard) {
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let value: String = redis::cmd("GET")
        .arg("orders")
        .query_async(&mut conn)
        .await
        .unwrap();
    let token = format!(":{}", guard.token().get());
    assert!(value.contains(&token), "the key holds `{value}`");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_py_lock_and_lockkit_plain_keys_exclude_each_other() {
    let redis = Redis::start().await.unwrap();
    let lockkit = plain(&redis).await;
    let mut cmd = tokio::process::Command::new(interop_python().unwrap());
    cmd.arg(foreign_program("redis_py_lock.py"))
        .arg(redis.port().to_string())
        .arg("orders");
    let mut py = ForeignClient::spawn("redis-py", cmd).unwrap();
    py.line_containing("ready", WITHIN).await.unwrap();

    // redis-py holds: lockkit is refused, and its waiter is granted after the
    // release.
    py.send("try").await.unwrap();
    assert_eq!(py.line_containing("", WITHIN).await.unwrap(), "held");
    refused_while_foreign_holds(&lockkit).await;
    let waiter = lock_in_background(&lockkit);
    py.send("release").await.unwrap();
    py.line_containing("released", WITHIN).await.unwrap();
    let guard = waiter
        .await
        .unwrap()
        .expect("not granted after redis-py released");

    // lockkit holds: redis-py's try is refused, and its blocking acquire waits
    // until lockkit releases.
    py.send("try").await.unwrap();
    assert_eq!(py.line_containing("", WITHIN).await.unwrap(), "busy");
    py.send("acquire").await.unwrap();
    py.line_containing("waiting", WITHIN).await.unwrap();
    lockkit_value_stands(&redis, &guard).await;
    guard.release().await.unwrap();
    assert_eq!(py.line_containing("", WITHIN).await.unwrap(), "held");
    refused_while_foreign_holds(&lockkit).await;
    py.send("release").await.unwrap();
    py.line_containing("released", WITHIN).await.unwrap();
    py.send("quit").await.unwrap();
    assert!(py.finish(WITHIN).await.unwrap().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rslock_and_lockkit_plain_keys_exclude_each_other() {
    let redis = Redis::start().await.unwrap();
    let lockkit = plain(&redis).await;
    let client = redis::Client::open(redis.url()).unwrap();
    let rslock = rslock::LockManager::from_clients(vec![client]);
    let ttl = Duration::from_secs(10);

    // rslock holds: lockkit is refused, and its waiter is granted after the release.
    let theirs = rslock.lock("orders", ttl).await.unwrap();
    refused_while_foreign_holds(&lockkit).await;
    let waiter = lock_in_background(&lockkit);
    rslock.unlock(&theirs).await;
    let guard = waiter
        .await
        .unwrap()
        .expect("not granted after rslock released");

    // lockkit holds: rslock's lock (a few quick tries) fails, and its blocking
    // acquire holds once lockkit releases.
    assert!(rslock.lock("orders", ttl).await.is_err(), "rslock got in");
    lockkit_value_stands(&redis, &guard).await;
    let acquiring = {
        let rslock = rslock.clone();
        tokio::spawn(async move {
            tokio::time::timeout(WITHIN, rslock.acquire_no_guard("orders", ttl)).await
        })
    };
    guard.release().await.unwrap();
    let theirs = acquiring
        .await
        .unwrap()
        .expect("rslock did not get the lock within 15 s of lockkit's release")
        .unwrap();
    refused_while_foreign_holds(&lockkit).await;
    rslock.unlock(&theirs).await;
}
