//! Consul faults against the testkit's stand-in (see conformance_consul.rs for
//! why a stand-in): a session invalidated under its holder and the lock-delay that
//! follows, owners sharing a session, ACL tokens and `consuls://`. (A key deleted
//! behind its holder is a conformance case for every driver.)
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::time::Duration;

use lockkit_consul::{ConsulDriver, ConsulOptions};
use lockkit_core::{LockError, Locker};
use lockkit_testkit::{ConsulStandIn, StandInOptions};
use tokio::time::{Instant, timeout};

async fn driver(url: &str) -> Result<Arc<ConsulDriver>, LockError> {
    Ok(Arc::new(
        ConsulDriver::connect(ConsulOptions::from_url(url)?).await?,
    ))
}

/// The sessions holding a lock on `consul`, as the agent reports them: the
/// entries under the default `lockkit/` prefix that have a session.
async fn holder_sessions(consul: &ConsulStandIn) -> Result<Vec<String>, reqwest::Error> {
    let url = format!("http://{}/v1/kv/lockkit/?recurse", consul.addr());
    let entries: serde_json::Value = reqwest::get(url).await?.json().await?;
    Ok(entries
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["Session"].as_str().map(str::to_string))
        .collect())
}

/// Destroy the holder's session (an invalidation, as when its TTL lapses): its
/// `lost()` fires at the next renewal, the key is deleted (behavior `delete`), and
/// for the session's lock-delay (1.5 s) nobody can take the lock — a `try_lock` is
/// refused and a waiter is granted only once the delay has passed, with a greater
/// token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_session_is_invalidated_nobody_acquires_until_the_lock_delay_has_passed() {
    const LOCK_DELAY: Duration = Duration::from_millis(1500);
    let consul = ConsulStandIn::start().await.unwrap();
    let holder = Locker::new(
        driver(&format!(
            "{}?session_ttl_ms=10000&lock_delay_ms=1500",
            consul.url()
        ))
        .await
        .unwrap(),
    );
    let other = Locker::new(
        driver(&format!("{}?lock_delay_ms=0", consul.url()))
            .await
            .unwrap(),
    );
    let g = holder
        .lock("delayed")
        .ttl(Duration::from_millis(600))
        .no_wait()
        .await
        .unwrap();
    let lost = g.lost();
    let held = holder_sessions(&consul).await.unwrap();
    assert_eq!(held.len(), 1, "one lock is held: {held:?}");
    let session = &held[0];

    let client = reqwest::Client::new(); // the driver installed ring already
    let invalidated = Instant::now();
    let destroyed = client
        .put(format!(
            "http://{}/v1/session/destroy/{session}",
            consul.addr()
        ))
        .send()
        .await
        .unwrap();
    assert!(destroyed.status().is_success());

    match other.try_lock("delayed").await {
        Err(LockError::Contended { .. }) => {}
        r => panic!("a try_lock during the lock-delay was not refused: {r:?}"),
    }
    let waiter = tokio::spawn(async move {
        let g = other
            .lock("delayed")
            .ttl(Duration::from_secs(5))
            .wait(Duration::from_secs(15))
            .await
            .unwrap();
        (g, Instant::now())
    });
    let reason = timeout(Duration::from_secs(3), lost)
        .await
        .expect("lost() did not fire within 3 s of the invalidation");
    let lost_after = invalidated.elapsed();
    let (next, granted_at) = waiter.await.unwrap();
    let granted_after = granted_at - invalidated;
    eprintln!(
        "lost() {lost_after:?} after the invalidation ({reason}); waiter granted {granted_after:?} after it (lock-delay {LOCK_DELAY:?})"
    );
    assert!(
        granted_after >= LOCK_DELAY,
        "granted {granted_after:?} after the invalidation, inside the lock-delay"
    );
    // The waiter polls a delay with backoff capped at 1 s.
    assert!(
        granted_after <= LOCK_DELAY + Duration::from_millis(1500),
        "granted only {granted_after:?} after the invalidation"
    );
    assert!(next.token() > g.token());
    assert!(matches!(g.release().await, Err(LockError::Lost { .. })));
    next.release().await.unwrap();
}

/// Two owners sharing one driver (one session) still exclude each other: Consul
/// would let the session acquire its own key again, lockkit does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owners_sharing_a_session_exclude_each_other() {
    let consul = ConsulStandIn::start().await.unwrap();
    let shared = Locker::new(
        driver(&format!("{}?lock_delay_ms=0", consul.url()))
            .await
            .unwrap(),
    );
    let g = shared.try_lock("shared-session").await.unwrap();
    match shared.try_lock("shared-session").await {
        Err(LockError::Contended { .. }) => {}
        r => panic!("a second owner on the same session got the lock: {r:?}"),
    }
    let s2 = shared.clone();
    let waiter = tokio::spawn(async move {
        s2.lock("shared-session")
            .wait(Duration::from_secs(10))
            .await
            .unwrap()
    });
    let token = g.token();
    g.release().await.unwrap();
    let next = timeout(Duration::from_secs(5), waiter)
        .await
        .expect("the second owner was not granted within 5 s of the release")
        .unwrap();
    assert!(next.token() > token);
    next.release().await.unwrap();
}

/// With an ACL token required, a driver without it gets a typed `Config` error
/// naming the token (never showing one), and one with it works; the token comes
/// from the URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_acl_token_is_a_config_error_and_the_token_is_never_shown() {
    let consul =
        ConsulStandIn::start_with(StandInOptions::default().with_acl_token("s3cret-token"))
            .await
            .unwrap();
    let err = ConsulDriver::connect(
        ConsulOptions::from_url(&format!("{}?lock_delay_ms=0", consul.url())).unwrap(),
    )
    .await
    .unwrap_err();
    let shown = format!("{err} {err:?}");
    assert!(matches!(err, LockError::Config(_)), "{shown}");
    assert!(shown.contains("ACL token"), "{shown}");
    let url = format!("consul://s3cret-token@{}?lock_delay_ms=0", consul.addr());
    let d = driver(&url).await.unwrap();
    assert!(!format!("{d:?}").contains("s3cret"));
    let locker = Locker::new(d);
    locker
        .try_lock("acl")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}

/// `consuls://` against an HTTPS-only agent (the stand-in with client
/// certificates): it locks with the URL's CA and client certificate; a plain
/// `consul://` URL, another CA, or no client certificate each fail with a typed
/// `Connection` error that says what to change, and never show the token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consuls_locks_over_https_and_names_each_tls_mistake() {
    let consul = ConsulStandIn::start_with(StandInOptions::default().with_tls(true))
        .await
        .unwrap();
    let locker = lockkit_core::Locker::new(
        driver(&format!("{}&lock_delay_ms=0", consul.url()))
            .await
            .unwrap(),
    );
    locker
        .try_lock("tls")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let other = lockkit_testkit::CertAuthority::generate(dir.path()).unwrap();
    let ours = consul.tls_files().unwrap();
    let addr = consul.addr();
    for (url, says) in [
        (format!("consul://s3cret@{addr}"), "consuls://"),
        (
            format!(
                "consuls://s3cret@{addr}?tls_ca={}&tls_cert={}&tls_key={}",
                other.ca.display(),
                ours.client_cert.display(),
                ours.client_key.display()
            ),
            "tls_ca",
        ),
        (
            format!("consuls://s3cret@{addr}?tls_ca={}", ours.ca.display()),
            "tls_cert",
        ),
    ] {
        let err = ConsulDriver::connect(ConsulOptions::from_url(&url).unwrap())
            .await
            .unwrap_err();
        let shown = format!("{err} {err:?}");
        eprintln!("{}:\n  {err}", lockkit_core::redact_url(&url));
        assert!(matches!(err, LockError::Connection { .. }), "{shown}");
        assert!(err.to_string().contains(says), "{url}: {err}");
        assert!(!shown.contains("s3cret"), "{shown}");
    }
    let missing =
        ConsulOptions::from_url(&format!("consuls://{addr}?tls_ca=/no/such/ca.pem")).unwrap_err();
    assert!(matches!(missing, LockError::Config(_)), "{missing}");
}

/// Holding 100 locks under the watchdog (1.5 s TTL, a round every 500 ms) for 5 s
/// costs one session renewal per round, and one `check-session` transaction per
/// 64 locks — not a request per lock per round — and every lock stays held.
///
/// The lease leaves the watchdog two missed rounds of slack: with 600 ms (a round
/// every 200 ms) a loaded CI machine once starved it past the lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_held_locks_cost_one_session_renewal_per_round() {
    const LOCKS: usize = 100;
    let consul = ConsulStandIn::start().await.unwrap();
    let locker = Locker::new(
        driver(&format!("{}?lock_delay_ms=0", consul.url()))
            .await
            .unwrap(),
    );
    let mut guards = Vec::new();
    for i in 0..LOCKS {
        let g = locker
            .lock(format!("many/{i}"))
            .ttl(Duration::from_millis(1500))
            .no_wait()
            .await
            .unwrap();
        guards.push(g);
    }
    let (renews0, txns0) = (
        consul.requests("PUT", "/v1/session/renew/"),
        consul.requests("PUT", "/v1/txn"),
    );
    tokio::time::sleep(Duration::from_secs(5)).await;
    let renews = consul.requests("PUT", "/v1/session/renew/") - renews0;
    let txns = consul.requests("PUT", "/v1/txn") - txns0;
    eprintln!("{LOCKS} locks held 5 s: {renews} session renewals, {txns} transactions");
    for g in &guards {
        let left = g
            .deadline()
            .saturating_duration_since(tokio::time::Instant::now());
        assert!(
            !g.is_lost(),
            "{} lost ({left:?} of its lease left)",
            g.key()
        );
    }
    // About 10 rounds: allow for the keep-alive and scheduling slack, far below
    // the 1,000 a per-lock renewal would send.
    assert!((5..=25).contains(&renews), "{renews} renewals");
    assert!(
        txns <= renews * 2 + 4,
        "{txns} transactions for {renews} rounds"
    );
    for g in guards {
        let key = g.key().clone();
        g.release()
            .await
            .unwrap_or_else(|e| panic!("releasing {key}: {e}"));
    }
}
