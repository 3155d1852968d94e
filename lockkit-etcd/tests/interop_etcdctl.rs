//! lockkit beside `etcdctl lock` (Go's `concurrency.Mutex`), the real client from
//! Debian's etcd-client, on one lock: lockkit's lock `K` under `?prefix=P` and
//! `etcdctl lock P/K` share the queue `P/K/`. Each waits for the other, in the order
//! they queued, and the fencing tokens of both are create revisions, so they rise
//! across the two.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::{FencingToken, LockError, LockGuard, Locker, Result};
use lockkit_etcd::{EtcdDriver, EtcdOptions};
use lockkit_testkit::{Etcd, ForeignClient};
use tokio::task::JoinHandle;

const WITHIN: Duration = Duration::from_secs(15);

async fn locker(etcd: &Etcd) -> Locker {
    let url = format!("{}?prefix=jobs", etcd.url());
    Locker::new(Arc::new(
        EtcdDriver::connect(EtcdOptions::from_url(&url).unwrap())
            .await
            .unwrap(),
    ))
}

/// `etcdctl lock jobs/orders -- sh -c …`: once it holds the lock, it prints its
/// key and revision (`ETCD_LOCK_KEY`, `ETCD_LOCK_REV`) and holds until SIGTERM.
fn etcdctl_lock(etcd: &Etcd) -> ForeignClient {
    let mut cmd = etcd.etcdctl().unwrap();
    cmd.args(["lock", "jobs/orders"]);
    ForeignClient::spawn("etcdctl lock", cmd).unwrap()
}

/// The create revision of the key `etcdctl lock` holds, once it holds: it prints
/// the key (then its empty value) when its `concurrency.Mutex` is granted.
async fn held_at(etcd: &Etcd, etcdctl: &mut ForeignClient) -> FencingToken {
    let key = etcdctl
        .line_containing("jobs/orders/", WITHIN)
        .await
        .unwrap();
    let mut get = etcd.etcdctl().unwrap();
    let out = get
        .args(["get", &key, "-w", "json"])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.split("\"create_revision\":")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|r| r.parse().ok())
        .map(FencingToken)
        .unwrap_or_else(|| panic!("no create_revision for {key}: {text}"))
}

/// Waits until the queue shows `n` waiters, as lockkit sees it.
async fn until_waiters(locker: &Locker, n: usize) {
    lockkit_conformance::until_waiters(locker, "orders", n, WITHIN)
        .await
        .unwrap();
}

fn lock_in_background(locker: &Locker) -> JoinHandle<Result<LockGuard>> {
    let locker = locker.clone();
    tokio::spawn(async move {
        locker
            .lock("orders")
            .ttl(Duration::from_secs(10))
            .wait(Duration::from_secs(60))
            .await
    })
}

/// `etcdctl lock` holds: lockkit's try_lock is refused, inspection shows the Go
/// holder by its create revision, and a lockkit waiter is granted once `etcdctl`
/// releases (SIGTERM), with a greater token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcdctl_lock_holds_lockkit_off_until_it_releases() {
    let etcd = Etcd::start().await.unwrap();
    let lockkit = locker(&etcd).await;
    let mut etcdctl = etcdctl_lock(&etcd);
    let theirs = held_at(&etcd, &mut etcdctl).await;

    match lockkit.try_lock("orders").await {
        Err(LockError::Contended { .. }) => {}
        other => panic!("lockkit granted while etcdctl held: {other:?}"),
    }
    let seen = lockkit.inspect("orders").await.unwrap();
    assert_eq!(seen.holders.len(), 1, "{seen:?}");
    assert_eq!(seen.holders[0].token, theirs, "{seen:?}");

    let waiting = lock_in_background(&lockkit);
    until_waiters(&lockkit, 1).await;
    assert!(!waiting.is_finished(), "granted while etcdctl held");
    etcdctl.terminate();
    let guard = tokio::time::timeout(WITHIN, waiting)
        .await
        .expect("not granted after etcdctl released")
        .unwrap()
        .unwrap();
    assert!(
        guard.token() > theirs,
        "{:?} after {theirs:?}",
        guard.token()
    );
    let status = etcdctl.finish(WITHIN).await.unwrap();
    assert!(status.success(), "etcdctl lock: {status}");
    guard.release().await.unwrap();
}

/// lockkit holds: `etcdctl lock` queues behind it, and a lockkit waiter that
/// queued after `etcdctl` waits for it too: the lock goes lockkit → etcdctl →
/// lockkit, in queue order, with rising tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lockkit_holds_etcdctl_off_and_the_queue_order_is_kept() {
    let etcd = Etcd::start().await.unwrap();
    let (first, second) = (locker(&etcd).await, locker(&etcd).await);
    let held = first.try_lock("orders").await.unwrap();

    let mut etcdctl = etcdctl_lock(&etcd);
    until_waiters(&first, 1).await;
    let waiting = lock_in_background(&second);
    until_waiters(&first, 2).await;

    let ours = held.token();
    held.release().await.unwrap();
    let theirs = held_at(&etcd, &mut etcdctl).await;
    assert!(theirs > ours, "{theirs:?} after {ours:?}");
    let seen = first.inspect("orders").await.unwrap();
    assert_eq!(seen.holders.len(), 1, "{seen:?}");
    assert_eq!(seen.holders[0].token, theirs, "etcdctl holds: {seen:?}");
    assert_eq!(seen.waiters, Some(1), "{seen:?}");
    assert!(!waiting.is_finished(), "lockkit jumped ahead of etcdctl");

    etcdctl.terminate();
    let guard = tokio::time::timeout(WITHIN, waiting)
        .await
        .expect("not granted after etcdctl released")
        .unwrap()
        .unwrap();
    assert!(
        guard.token() > theirs,
        "{:?} after {theirs:?}",
        guard.token()
    );
    assert!(etcdctl.finish(WITHIN).await.unwrap().success());
    guard.release().await.unwrap();
}
