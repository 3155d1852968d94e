//! Real faults against real ZooKeeper 3.8: the server paused past the session
//! timeout, the ensemble member a holder talks to killed, a create whose reply was
//! lost; plus cleanup of empty key nodes and digest ACLs. (A node deleted behind
//! its holder is a conformance case for every driver.)
//!
//! Sessions are asked for 1 s; the testkit's servers tick every 200 ms, so the
//! client declares the connection lost after 400 ms without a reply (2/5 of the
//! session timeout) and the server expires a silent session after 1 to 1.2 s.

mod common;

use std::time::Duration;

use lockkit_core::driver::acquire;
use lockkit_core::{
    AcquireRequest, LockDriver, LockError, LockGuard, LockKey, Locker, OwnerId, Wait,
};
use lockkit_testkit::{ZooKeeper, ZooKeeperEnsemble};
use lockkit_zk::{ZkDriver, ZkOptions};
use tokio::task::JoinHandle;

use common::{SESSION_MS, driver, locker, one_holds_of_two, takes_and_releases};
use tokio::time::{Instant, sleep, timeout};
use zookeeper_client::{Acls, Client, CreateMode};

/// A waiter on its own client: resolves with its guard and when it was granted.
fn waiter(
    locker: Locker,
    key: &'static str,
) -> JoinHandle<Result<(LockGuard, Instant), LockError>> {
    tokio::spawn(async move {
        let g = locker
            .lock(key)
            .ttl(Duration::from_secs(5))
            .wait(Duration::from_secs(30))
            .await?;
        Ok((g, Instant::now()))
    })
}

/// Whether lock `key`'s queue on the servers at `hosts` comes to hold two nodes,
/// the holder's and a waiter's, within 10 s.
async fn waiter_queued(hosts: &str, key: &str) -> Result<bool, zookeeper_client::Error> {
    let raw = Client::connect(hosts).await?;
    let dir = format!("/lockkit/{key}");
    let queued = timeout(Duration::from_secs(10), async {
        while raw.list_children(&dir).await.map_or(0, |c| c.len()) < 2 {
            sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    Ok(queued.is_ok())
}

/// Pause the server (SIGSTOP) for three session timeouts while one client holds
/// and another waits. The holder's `lost()` fires while the server is still
/// frozen — the client hears nothing for 2/5 of the session timeout — and so
/// strictly before the waiter is granted, which can only happen after the server
/// resumes and expires the holder's session. The waiter's token is greater, and
/// the holder's next lock works, on a new session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_server_past_the_session_timeout_signals_lost_before_another_client_acquires() {
    let zk = ZooKeeper::start().await.unwrap();
    let (holder, other, g) = one_holds_of_two(&zk, "paused").await.unwrap();
    let lost = g.lost();
    let queued = waiter(other, "paused");
    let hosts = zk.address();
    assert!(
        waiter_queued(&hosts, "paused").await.unwrap(),
        "no waiter queued within 10 s"
    );
    assert!(
        !queued.is_finished(),
        "the waiter was granted while the lock was held"
    );

    let paused = Instant::now();
    zk.pause();
    let pause_for = Duration::from_millis(SESSION_MS * 3);
    let reason = timeout(pause_for, lost).await;
    let lost_at = Instant::now();
    let remaining = pause_for.saturating_sub(paused.elapsed());
    sleep(remaining).await;
    zk.resume();
    let reason = reason.expect("lost() did not fire while the server was paused");
    // The server expires the silent sessions as it resumes; should the holder's
    // reconnect win that race, its session (and node) lives on, and the waiter
    // gets the lock when the holder reacts to lost() by releasing.
    let mut queued = queued;
    let token = g.token();
    let mut held = Some(g);
    let (expired, (next, granted_at)) = match timeout(Duration::from_secs(10), &mut queued).await {
        Ok(r) => (true, r.unwrap().unwrap()),
        Err(_) => {
            if let Some(g) = held.take() {
                let _ = g.release().await;
            }
            let r = timeout(Duration::from_secs(20), queued).await;
            (
                false,
                r.expect("the waiter was not granted after the release")
                    .unwrap()
                    .unwrap(),
            )
        }
    };
    eprintln!(
        "lost() {:?} after the pause ({reason}); waiter granted {:?} after the pause ({})",
        lost_at - paused,
        granted_at - paused,
        if expired {
            "the holder's session expired"
        } else {
            "after the holder released"
        }
    );
    assert!(
        lost_at < granted_at,
        "the waiter was granted before the holder learned"
    );
    assert!(
        lost_at - paused < Duration::from_millis(SESSION_MS),
        "lost() took {:?}, more than the session timeout",
        lost_at - paused
    );
    assert!(next.token() > token, "{} !> {}", next.token(), token);
    if let Some(g) = held.take() {
        assert!(matches!(g.release().await, Err(LockError::Lost { .. })));
    }
    next.release().await.unwrap();
    // Whichever way, the holder's next lock works (on a new session if it expired).
    let fresh = holder.lock("after-expiry").no_wait().await.unwrap();
    assert!(!fresh.is_lost());
    fresh.release().await.unwrap();
}

/// Kill (SIGKILL) the ensemble member a holder is connected to — its only
/// server — while a client of the other two members waits. The holder's `lost()`
/// fires within the connection timeout; the ensemble expires its session and the
/// waiter is granted, after the holder learned, with a greater token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_member_a_holder_uses_signals_lost_and_the_lock_moves_on() {
    let mut ensemble = ZooKeeperEnsemble::start(3).await.unwrap();
    let leader = ensemble.leader().await.unwrap_or(0);
    let victim = (leader + 1) % 3;
    let others: Vec<String> = (0..3)
        .filter(|i| *i != victim)
        .map(|i| ensemble.members[i].address())
        .collect();
    let holder = locker(&format!("zk://{}", ensemble.members[victim].address()))
        .await
        .unwrap();
    let other = locker(&format!("zk://{}", others.join(","))).await.unwrap();
    let g = holder.lock("member-kill").no_wait().await.unwrap();
    let lost = g.lost();
    let queued = waiter(other, "member-kill");
    assert!(
        waiter_queued(&others.join(","), "member-kill")
            .await
            .unwrap(),
        "no waiter queued within 10 s"
    );
    assert!(
        !queued.is_finished(),
        "the waiter was granted while the lock was held"
    );

    let killed = Instant::now();
    ensemble.members[victim].kill();
    let reason = timeout(Duration::from_secs(5), lost)
        .await
        .expect("lost() did not fire within 5 s of the member's death");
    let lost_at = Instant::now();
    let (next, granted_at) = timeout(Duration::from_secs(20), queued)
        .await
        .expect("the waiter was not granted within 20 s")
        .unwrap()
        .unwrap();
    eprintln!(
        "member m{} killed: lost() after {:?} ({reason}); waiter granted after {:?}",
        victim + 1,
        lost_at - killed,
        granted_at - killed
    );
    assert!(
        lost_at < granted_at,
        "the waiter was granted before the holder learned"
    );
    assert!(
        lost_at - killed < Duration::from_millis(SESSION_MS),
        "lost() took {:?}",
        lost_at - killed
    );
    assert!(next.token() > g.token());
    next.release().await.unwrap();
}

/// A create whose reply never came leaves a node named with the owner's id. The
/// owner's release (which the client sends after an unknown outcome) finds it by
/// that name and deletes it, so it cannot block the queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_from_a_lost_create_reply_is_found_by_owner_and_removed() {
    let zk = ZooKeeper::start().await.unwrap();
    let d = driver(&zk.url()).await.unwrap();
    let owner = OwnerId::new();
    // What a create that landed without its reply leaves behind.
    let raw = Client::connect(&zk.address()).await.unwrap();
    let container = CreateMode::Container.with_acls(Acls::anyone_all());
    raw.create("/lockkit/lost-reply", &[], &container)
        .await
        .unwrap();
    let node = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    raw.create(
        &format!("/lockkit/lost-reply/w-{}-", owner.to_hex()),
        &[],
        &node,
    )
    .await
    .unwrap();
    let key = LockKey::new("lost-reply").unwrap();
    let other = Locker::new(driver(&zk.url()).await.unwrap());
    assert!(matches!(
        other.try_lock("lost-reply").await,
        Err(LockError::Contended { .. })
    ));
    assert!(
        d.release(&key, &owner).await.unwrap(),
        "the owner's node was not found"
    );
    assert!(
        raw.list_children("/lockkit/lost-reply")
            .await
            .unwrap()
            .is_empty()
    );
    takes_and_releases(&other, "lost-reply").await.unwrap();
}

/// A repeated acquire by the same owner through the driver returns the same node
/// (same token), and a try_lock that finds the lock held leaves no node behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_try_locks_leave_no_node_behind() {
    let zk = ZooKeeper::start().await.unwrap();
    let (a, b) = (
        driver(&zk.url()).await.unwrap(),
        driver(&zk.url()).await.unwrap(),
    );
    let key = LockKey::new("no-leak").unwrap();
    let req = |o: &OwnerId| {
        AcquireRequest::new(key.clone(), o.clone(), Duration::from_secs(5), Wait::NoWait)
    };
    let holder = OwnerId::new();
    let g = acquire(&*a, &req(&holder)).await.unwrap();
    for _ in 0..20 {
        assert!(matches!(
            acquire(&*b, &req(&OwnerId::new())).await,
            Err(LockError::Contended { .. })
        ));
    }
    let raw = Client::connect(&zk.address()).await.unwrap();
    assert_eq!(
        raw.list_children("/lockkit/no-leak").await.unwrap().len(),
        1
    );
    assert_eq!(acquire(&*a, &req(&holder)).await.unwrap().token, g.token);
    assert!(a.release(&key, &holder).await.unwrap());
}

/// 1,000 distinct keys, each locked and released once, leave no key node behind:
/// each is a container node, which the server deletes once it is empty (the
/// testkit's servers sweep every 500 ms; the default is 60 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_used_keys_leave_no_nodes_behind() {
    const KEYS: usize = 1000;
    let zk = ZooKeeper::start().await.unwrap();
    let l = locker(&zk.url()).await.unwrap();
    let raw = Client::connect(&zk.address()).await.unwrap();
    let started = Instant::now();
    let mut peak = 0;
    for i in 0..KEYS {
        l.try_lock(format!("used-once/{i}"))
            .await
            .unwrap()
            .release()
            .await
            .unwrap();
        if i % 250 == 249 {
            peak = peak.max(raw.list_children("/lockkit").await.unwrap().len());
        }
    }
    let used = started.elapsed();
    let swept = Instant::now();
    let left = timeout(Duration::from_secs(30), async {
        loop {
            let left = raw.list_children("/lockkit").await.unwrap().len();
            if left == 0 {
                return;
            }
            sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    let remaining = raw.list_children("/lockkit").await.unwrap().len();
    eprintln!(
        "{KEYS} keys used in {used:?}; at most {peak} key nodes seen at once; all gone {:?} after the last release",
        swept.elapsed()
    );
    assert!(
        left.is_ok(),
        "{remaining} of {KEYS} key nodes still there 30 s after use"
    );
}

/// With `user:password@`, lockkit's nodes carry the digest identity's ACL: another
/// identity cannot take, break or queue on the lock (a typed `Config` error naming
/// the credentials), and the holder's lock is untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digest_credentials_keep_other_identities_off_the_lock() {
    let zk = ZooKeeper::start().await.unwrap();
    let port = zk.port();
    let alice = locker(&format!("zk://alice:s3cret@127.0.0.1:{port}/acl"))
        .await
        .unwrap();
    let bob = driver(&format!("zk://bob:hunter2@127.0.0.1:{port}/acl"))
        .await
        .unwrap();
    let g = alice.lock("guarded").no_wait().await.unwrap();
    let key = LockKey::new("guarded").unwrap();
    let req = AcquireRequest::new(
        key.clone(),
        OwnerId::new(),
        Duration::from_secs(5),
        Wait::NoWait,
    );
    for (what, err) in [
        ("acquire", acquire(&*bob, &req).await.unwrap_err()),
        ("force_release", bob.force_release(&key).await.unwrap_err()),
    ] {
        let shown = format!("{err} {err:?}");
        assert!(matches!(err, LockError::Config(_)), "{what}: {shown}");
        assert!(
            shown.contains("not authorized") || shown.contains("credentials"),
            "{what}: {shown}"
        );
        assert!(
            !shown.contains("s3cret") && !shown.contains("hunter2"),
            "{what}: {shown}"
        );
    }
    assert!(!g.is_lost());
    let again = locker(&format!("zk://alice:s3cret@127.0.0.1:{port}/acl"))
        .await
        .unwrap();
    assert!(matches!(
        again.try_lock("guarded").await,
        Err(LockError::Contended { .. })
    ));
    g.release().await.unwrap();
    again
        .try_lock("guarded")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}

/// `zks://` against ZooKeeper's TLS port: the wrong CA, or a client certificate
/// the server does not trust, fail with a Connection error that names the
/// problem; a plain `zk://` to the TLS port is told to use `zks://`.
#[tokio::test]
async fn tls_mistakes_are_named_and_zk_to_the_tls_port_is_told_to_use_zks() {
    let server = ZooKeeper::start_tls(true).await.unwrap();
    let port = server.secure_port().unwrap();
    let other_dir = tempfile::tempdir().unwrap();
    let other = lockkit_testkit::CertAuthority::generate(other_dir.path()).unwrap();
    let ours = server.tls_files().unwrap();
    let connect = |url: String| async move {
        let options = ZkOptions::from_url(&url).unwrap();
        ZkDriver::connect(options).await.map(|_| ()).unwrap_err()
    };
    let cases = [
        (
            format!("zk://127.0.0.1:{port}?connect_timeout_ms=2000"),
            "zks://",
        ),
        (
            format!(
                "zks://127.0.0.1:{port}?tls_ca={}&tls_cert={}&tls_key={}&connect_timeout_ms=2000",
                other.ca.display(),
                ours.client_cert.display(),
                ours.client_key.display()
            ),
            "tls_ca",
        ),
        (
            format!(
                "zks://127.0.0.1:{port}?tls_ca={}&tls_cert={}&tls_key={}&connect_timeout_ms=2000",
                ours.ca.display(),
                other.client_cert.display(),
                other.client_key.display()
            ),
            "tls_cert",
        ),
    ];
    for (url, says) in cases {
        let e = connect(url.clone()).await;
        eprintln!("{url}:\n  {e}");
        assert!(matches!(e, LockError::Connection { .. }), "{e:?}");
        assert!(e.to_string().contains(says), "{url}: {e}");
        assert!(!e.to_string().contains("PRIVATE KEY"), "{e}");
    }
    // zks:// without a CA is refused before connecting.
    let e = ZkOptions::from_url(&format!("zks://127.0.0.1:{port}")).unwrap_err();
    assert!(e.to_string().contains("tls_ca"), "{e}");
}
