//! Renewal traffic and loss detection against real etcd, read from the driver's
//! own counters (keep-alive rounds, watch progress requests, existence-check
//! txns): they are not public, so these tests live in the crate.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use lockkit_core::{LockDriver, LockError, LockKey, Locker, LostReason};
use lockkit_testkit::{Etcd, Fault, FaultProxy};
use tokio::time::{Instant, sleep, timeout};

use crate::{EtcdDriver, EtcdOptions};

async fn driver(url: &str) -> Arc<EtcdDriver> {
    Arc::new(
        EtcdDriver::connect(EtcdOptions::from_url(url).unwrap())
            .await
            .unwrap(),
    )
}

async fn locker(url: &str) -> Locker {
    Locker::new(driver(url).await)
}

/// Lease keep-alive rounds the driver has sent.
fn keep_alive_rounds(d: &EtcdDriver) -> u64 {
    d.inner.leases.rounds.load(Ordering::Relaxed)
}

/// Existence-check txns renewals have sent.
fn existence_checks(d: &EtcdDriver) -> u64 {
    d.inner.existence_checks.load(Ordering::Relaxed)
}

/// Progress requests renewals have sent on the watch stream.
fn watch_progress_rounds(d: &EtcdDriver) -> u64 {
    d.inner.progress.rounds.load(Ordering::Relaxed)
}

/// 1,000 watchdog holds of one driver share a single etcd lease (counted with
/// etcd's LeaseLeases), and each watchdog call renews them all with one
/// keep-alive round and one progress request on the watch stream, and no
/// per-lock request at all: over two TTLs, zero existence-check txns (the watch
/// on each held key vouches for it), and keep-alive and progress rounds follow
/// the watchdog's calls, not the number of locks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_locks_share_one_lease_and_one_keep_alive_per_round() {
    const LOCKS: usize = 1000;
    let etcd = Etcd::start().await.unwrap();
    let driver = driver(&etcd.url()).await;
    let many = Locker::new(driver.clone());
    let other = locker(&etcd.url()).await;
    let ttl = Duration::from_secs(3);
    let started = Instant::now();
    let mut guards = Vec::with_capacity(LOCKS);
    for i in 0..LOCKS {
        guards.push(
            many.lock(format!("many/{i}"))
                .ttl(ttl)
                .no_wait()
                .await
                .unwrap(),
        );
    }
    let acquiring = started.elapsed();

    let mut client = driver.inner.client.clone();
    let on_server = client.leases().await.unwrap();
    let ids: Vec<i64> = on_server.leases().iter().map(|l| l.id()).collect();
    assert_eq!(ids.len(), 1, "the server has {} leases: {ids:?}", ids.len());
    assert_eq!(
        driver.inner.leases.ids(),
        ids,
        "the driver's lease is not the server's one"
    );

    let before = keep_alive_rounds(&driver);
    let (checks_before, progress_before) =
        (existence_checks(&driver), watch_progress_rounds(&driver));
    let window = Instant::now();
    sleep(ttl * 2).await;
    let rounds = keep_alive_rounds(&driver) - before;
    let checks = existence_checks(&driver) - checks_before;
    let progress = watch_progress_rounds(&driver) - progress_before;
    let watched = window.elapsed();
    let periods = (watched.as_secs_f64() / (ttl / 3).as_secs_f64()).ceil() as u64;
    eprintln!(
        "{LOCKS} locks acquired in {acquiring:?}; leases on the server: {}; in {watched:?}: keep-alive rounds {rounds}, watch progress requests {progress}, existence-check txns {checks} (watchdog periods: {periods}; existence-check txns while acquiring: {checks_before})",
        ids.len()
    );
    assert!(rounds >= 1, "no keep-alive at all in two TTLs");
    assert_eq!(
        checks, 0,
        "renewals sent existence-check txns although every hold is watched"
    );
    assert!(
        progress >= 1 && progress <= rounds,
        "{progress} progress requests for {rounds} keep-alive rounds"
    );
    // Renewing per lock would take at least LOCKS requests per watchdog period;
    // here each watchdog call (a few per period, as holds taken over a couple of
    // seconds sit on a few schedules) costs one keep-alive round for all of them.
    assert!(
        rounds < (LOCKS / 10) as u64,
        "{rounds} keep-alive rounds in {periods} watchdog periods for {LOCKS} locks"
    );
    assert!(guards.iter().all(|g| !g.is_lost()), "a hold was lost");
    for i in [0, LOCKS / 2, LOCKS - 1] {
        assert!(matches!(
            other.try_lock(format!("many/{i}")).await,
            Err(LockError::Contended { .. })
        ));
    }
    for g in guards {
        g.release().await.unwrap();
    }
}

/// The holder's connection (and with it the watch stream on its key) is cut and
/// kept down while another client force-releases the lock; then it comes back.
/// The watch is re-created from the hold's revision (or the round falls back to
/// the compare txn), so the delete that happened while the stream was down is
/// still found: `lost()` fires as a detected loss, not by expiry, within one TTL
/// of the connection coming back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_deleted_while_the_watch_stream_is_down_is_reported_lost_once_it_is_back() {
    let etcd = Etcd::start().await.unwrap();
    let proxy = FaultProxy::start(etcd.port()).await.unwrap();
    let holder_driver = driver(&format!("etcd://127.0.0.1:{}", proxy.port())).await;
    let holder = Locker::new(holder_driver.clone());
    let admin = driver(&etcd.url()).await;
    let ttl = Duration::from_secs(3);
    let key = "deleted-while-down";
    let g = holder.lock(key).ttl(ttl).no_wait().await.unwrap();
    let lost = g.lost();
    let lost_at = tokio::spawn(async move {
        let reason = lost.await;
        (Instant::now(), reason)
    });
    // A renewal round vouched for by the watch, before the cut.
    let checks = existence_checks(&holder_driver);
    let renewed = timeout(ttl, async {
        let first = g.deadline();
        while g.deadline() == first {
            sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(renewed.is_ok(), "no renewal within one TTL");

    // Cut: new connections hang, existing ones are closed.
    proxy.set(Fault::BlackHole);
    proxy.reset();
    let cut = Instant::now();
    assert!(
        admin
            .force_release(&LockKey::new(key).unwrap())
            .await
            .unwrap(),
        "force_release found no holder"
    );
    sleep(Duration::from_millis(300)).await;
    proxy.set(Fault::Forward);
    let back = Instant::now();

    let (lost_at, reason) = timeout(ttl * 2, lost_at)
        .await
        .expect("lost() did not fire within 2×TTL of the connection coming back")
        .unwrap();
    eprintln!(
        "cut at 0, deleted, back after {:?}; lost() after {:?} ({reason:?}); existence-check txns before the cut {checks}, since {}",
        back - cut,
        lost_at - cut,
        existence_checks(&holder_driver) - checks
    );
    assert_ne!(
        reason,
        LostReason::Expired,
        "lost() fired by expiry, not because the delete was found"
    );
    assert!(
        lost_at.saturating_duration_since(back) <= ttl,
        "lost() fired {:?} after the connection came back; limit one TTL",
        lost_at.saturating_duration_since(back)
    );
    assert!(g.is_lost());
}
