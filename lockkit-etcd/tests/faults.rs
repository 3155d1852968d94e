//! Real faults against real etcd: the leader killed during a hold, and the holder
//! black-holed past its lease. (The renewal tests that read the driver's own
//! counters, 1,000 holds on one lease and a delete while the watch stream is
//! down, are in-crate: `src/renew/tests.rs`.)

use std::time::Duration;

use lockkit_core::LockError;
use lockkit_testkit::{Etcd, EtcdCluster, Fault, FaultProxy};
use tokio::time::{Instant, sleep, timeout};

/// Kill the leader of a 3-node cluster while a client holds a watchdog lock. The
/// holder either keeps its lock (renewals carry on through the election: nobody
/// else can take it, and its release works) or its `lost()` fires (then another
/// client can take the lock, with a greater token). Either way, new acquisitions
/// succeed once a new leader is elected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_kill_keeps_the_hold_or_signals_lost_and_acquires_resume_after_election() {
    let mut cluster = EtcdCluster::start(3).await.unwrap();
    let url = cluster.url();
    let (holder, other) = (
        lockkit::connect(&url).await.unwrap(),
        lockkit::connect(&url).await.unwrap(),
    );
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
            // The refused try_lock's entry is deleted by a retry in the background
            // when its first delete failed (the election): wait until the key is
            // free before trying again.
            let free_by = Instant::now() + ttl * 3;
            loop {
                // An inspection may reach the killed member first: look again.
                let seen = other.inspect("leader-kill").await;
                if seen.is_ok_and(|s| s.holders.is_empty() && s.waiters == Some(0)) {
                    break;
                }
                assert!(Instant::now() < free_by, "the key was never free again");
                sleep(Duration::from_millis(20)).await;
            }
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
    let holder = lockkit::connect(&format!("etcd://127.0.0.1:{}", proxy.port()))
        .await
        .unwrap();
    let other = lockkit::connect(&etcd.url()).await.unwrap();
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
    // Wait for a renewal, so the cut is not right after the grant.
    let granted = g.deadline();
    timeout(ttl, async {
        while g.deadline() == granted {
            sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("no renewal within one TTL of the grant");
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
