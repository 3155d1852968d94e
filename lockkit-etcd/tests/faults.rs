//! Real faults against real etcd: the leader killed during a hold, the holder
//! black-holed past its lease, and 1,000 holds renewed through a single lease.

#![allow(clippy::unwrap_used, clippy::panic)] // Tests fail by panicking.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::{LockError, Locker};
use lockkit_etcd::{EtcdDriver, EtcdOptions};
use lockkit_testkit::{Etcd, EtcdCluster, Fault, FaultProxy};
use tokio::time::{Instant, sleep, timeout};

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

/// Kill the leader of a 3-node cluster while a client holds a watchdog lock. The
/// holder either keeps its lock (renewals carry on through the election: nobody
/// else can take it, and its release works) or its `lost()` fires (then another
/// client can take the lock, with a greater token). Either way, new acquisitions
/// succeed once a new leader is elected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_kill_keeps_the_hold_or_signals_lost_and_acquires_resume_after_election() {
    let mut cluster = EtcdCluster::start(3).await.unwrap();
    let url = cluster.url();
    let (holder, other) = (locker(&url).await, locker(&url).await);
    let ttl = Duration::from_secs(3);
    let g = holder.lock("leader-kill").ttl(ttl).no_wait().await.unwrap();
    let token = g.token();
    let mut lost = Box::pin(g.lost());

    let leader = cluster.leader().await.expect("a leader before the kill");
    let killed = Instant::now();
    cluster.members[leader].kill();
    let elected = timeout(Duration::from_secs(15), async {
        loop {
            if cluster.leader().await.is_some_and(|l| l != leader) {
                return killed.elapsed();
            }
            sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("no new leader within 15 s of the kill");

    let asked = Instant::now();
    let fresh = other
        .lock("after-election")
        .ttl(ttl)
        .wait(Duration::from_secs(10))
        .await
        .expect("a new acquisition after the election");
    let fresh_took = asked.elapsed();
    fresh.release().await.unwrap();

    // Watch the holder through two more TTLs: renewals must keep it, or lost()
    // must say it is gone.
    let outcome = timeout(ttl * 2, lost.as_mut()).await;
    eprintln!(
        "leader m{} killed; new leader after {elected:?}; a fresh acquire then took {fresh_took:?}; holder {}",
        leader + 1,
        match &outcome {
            Ok(reason) => format!("lost its lock: {reason}"),
            Err(_) => "kept its lock".into(),
        }
    );
    match outcome {
        Err(_) => {
            assert!(!g.is_lost(), "lost() quiet but the guard says lost");
            match other.try_lock("leader-kill").await {
                Err(LockError::Contended { .. }) => {}
                Err(e) => panic!("expected Contended while the holder keeps its lock, got {e}"),
                Ok(_) => panic!("another client took a lock the holder still believes it holds"),
            }
            g.release()
                .await
                .expect("the holder that kept its lock can release it");
            let next = other.try_lock("leader-kill").await.unwrap();
            assert!(next.token() > token);
            next.release().await.unwrap();
        }
        Ok(_) => {
            drop(g);
            let next = other
                .lock("leader-kill")
                .ttl(ttl)
                .wait(ttl * 3)
                .await
                .expect("after the holder lost its lock, another client gets it");
            assert!(next.token() > token);
            next.release().await.unwrap();
        }
    }
}

/// The holder reaches etcd through a proxy that then black-holes it past its
/// lease: `lost()` fires before the other client's waiting acquire is granted,
/// and the other client's token is greater.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn black_holed_holder_sees_lost_before_another_client_is_granted() {
    let etcd = Etcd::start().await.unwrap();
    let proxy = FaultProxy::start(etcd.port()).await.unwrap();
    let holder = locker(&format!("etcd://127.0.0.1:{}", proxy.port())).await;
    let other = locker(&etcd.url()).await;
    let ttl = Duration::from_secs(2);
    let key = "black-hole";
    let g = holder.lock(key).ttl(ttl).no_wait().await.unwrap();
    let token = g.token();
    let lost = g.lost();
    let lost_at = tokio::spawn(async move {
        let reason = lost.await;
        (Instant::now(), reason)
    });
    let waiter = tokio::spawn(async move {
        let r = other
            .lock(key)
            .ttl(Duration::from_secs(10))
            .wait(Duration::from_secs(30))
            .await;
        (Instant::now(), r)
    });
    // Let a renewal or two pass, so the cut is not right after the grant.
    sleep(ttl / 2).await;
    assert!(!g.is_lost());
    proxy.set(Fault::BlackHole);
    let cut = Instant::now();

    let (lost_at, reason) = timeout(ttl * 3, lost_at)
        .await
        .expect("lost() did not fire within 3×TTL of the black hole")
        .unwrap();
    let deadline = g.deadline();
    let (granted_at, granted) = timeout(Duration::from_secs(30), waiter)
        .await
        .expect("the other client was never granted")
        .unwrap();
    let next = granted.unwrap();
    eprintln!(
        "black hole at 0; holder's lost() after {:?} ({reason}); its deadline at {:?}; other client granted after {:?}; tokens {} → {}",
        lost_at - cut,
        deadline.saturating_duration_since(cut),
        granted_at - cut,
        token,
        next.token()
    );
    assert!(
        deadline <= granted_at && lost_at <= granted_at,
        "the other client was granted before the holder's lost() fired"
    );
    assert!(
        lost_at - cut <= ttl + Duration::from_millis(500),
        "lost() fired {:?} after the cut; the lease is {ttl:?}",
        lost_at - cut
    );
    assert!(
        next.token() > token,
        "the next holder's token is not greater"
    );
    next.release().await.unwrap();
    drop(g);
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

    let mut client = driver.client().clone();
    let on_server = client.leases().await.unwrap();
    let ids: Vec<i64> = on_server.leases().iter().map(|l| l.id()).collect();
    assert_eq!(ids.len(), 1, "the server has {} leases: {ids:?}", ids.len());
    assert_eq!(
        driver.lease_ids(),
        ids,
        "the driver's lease is not the server's one"
    );

    let before = driver.keep_alive_rounds();
    let (checks_before, progress_before) =
        (driver.existence_checks(), driver.watch_progress_rounds());
    let window = Instant::now();
    sleep(ttl * 2).await;
    let rounds = driver.keep_alive_rounds() - before;
    let checks = driver.existence_checks() - checks_before;
    let progress = driver.watch_progress_rounds() - progress_before;
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
    let checks = holder_driver.existence_checks();
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
    use lockkit_core::LockDriver;
    assert!(
        admin
            .force_release(&lockkit_core::LockKey::new(key).unwrap())
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
        holder_driver.existence_checks() - checks
    );
    assert_ne!(
        reason,
        lockkit_core::LostReason::Expired,
        "lost() fired by expiry, not because the delete was found"
    );
    assert!(
        lost_at.saturating_duration_since(back) <= ttl,
        "lost() fired {:?} after the connection came back; limit one TTL",
        lost_at.saturating_duration_since(back)
    );
    assert!(g.is_lost());
}
