//! TLS (`etcds://`) against real etcd, beyond the conformance suite: refusals are
//! typed `Connection` errors that name the certificate problem, come back within a
//! bounded (measured) time, and never show the password; mutual TLS.

use std::time::Duration;

use lockkit_core::{LockError, Locker};
use lockkit_etcd::{EtcdDriver, EtcdOptions};
use lockkit_testkit::{CertAuthority, Etcd};
use tokio::time::{Instant, timeout};

/// The driver's own connect limit is 5 s; a refusal must come back well within it.
const BOUND: Duration = Duration::from_secs(5);

/// Connects to `url` and expects a refusal: returns the error and how long it
/// took, or what happened instead.
async fn refused(url: &str) -> Result<(LockError, Duration), String> {
    let started = Instant::now();
    let options = EtcdOptions::from_url(url).map_err(|e| format!("{url}: {e}"))?;
    let result = timeout(BOUND * 2, EtcdDriver::connect(options))
        .await
        .map_err(|_| format!("connect to {url} hung for {:?}", BOUND * 2))?;
    let took = started.elapsed();
    match result {
        Ok(d) => Err(format!("connect to {url} succeeded: {d:?}")),
        Err(e) => Ok((e, took)),
    }
}

fn assert_connection_error(e: &LockError, took: Duration, needles: &[&str]) {
    assert!(matches!(e, LockError::Connection { .. }), "{e:?}");
    assert!(e.is_retryable());
    let text = format!("{e} {e:?}");
    for needle in needles {
        assert!(text.contains(needle), "no {needle:?} in: {text}");
    }
    assert!(!text.contains("hunter2"), "the password is shown: {text}");
    assert!(took < BOUND, "the refusal took {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_certificate_from_another_ca_is_refused_naming_the_certificate_problem() {
    let etcd = Etcd::start_tls().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let other = CertAuthority::generate(dir.path()).unwrap();
    let port = etcd.port();
    // With credentials (etcd-client authenticates while connecting) and without
    // (the driver's first request finds it).
    for url in [
        format!(
            "etcds://root:hunter2@127.0.0.1:{port}?tls_ca={}",
            other.ca.display()
        ),
        format!("etcds://127.0.0.1:{port}?tls_ca={}", other.ca.display()),
    ] {
        let (e, took) = refused(&url).await.unwrap();
        eprintln!("another CA: refused after {took:?}: {e}");
        // Both CAs are called lockkit-testkit-ca: rustls finds the issuer by name
        // and the signature does not verify.
        assert_connection_error(
            &e,
            took,
            &["invalid peer certificate", "BadSignature", "tls_ca"],
        );
    }
    // The right CA, same server: it works.
    let locker = Locker::new(std::sync::Arc::new(
        EtcdDriver::connect(EtcdOptions::from_url(&etcd.url()).unwrap())
            .await
            .unwrap(),
    ));
    locker.try_lock("k").await.unwrap().release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_tls_ca_the_system_roots_refuse_a_throwaway_ca() {
    let etcd = Etcd::start_tls().await.unwrap();
    let url = format!("etcds://root:hunter2@127.0.0.1:{}", etcd.port());
    let (e, took) = refused(&url).await.unwrap();
    eprintln!("system roots: refused after {took:?}: {e}");
    assert_connection_error(&e, took, &["UnknownIssuer", "system roots"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_etcd_url_to_a_tls_only_server_fails_fast_and_suggests_etcds() {
    let etcd = Etcd::start_tls().await.unwrap();
    let url = format!("etcd://root:hunter2@127.0.0.1:{}", etcd.port());
    let (e, took) = refused(&url).await.unwrap();
    eprintln!("plain to TLS: refused after {took:?}: {e}");
    assert_connection_error(&e, took, &["use etcds://"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_works_with_the_client_certificate_and_refuses_a_client_without_one() {
    let etcd = Etcd::start_mutual_tls().await.unwrap();
    let url = etcd.url();
    assert!(
        url.contains("tls_cert=") && url.contains("tls_key="),
        "{url}"
    );
    let locker = Locker::new(std::sync::Arc::new(
        EtcdDriver::connect(EtcdOptions::from_url(&url).unwrap())
            .await
            .unwrap(),
    ));
    let g = locker.try_lock("mutual").await.unwrap();
    assert!(g.token().0 > 0);
    g.release().await.unwrap();

    let ca = &etcd.tls_files().unwrap().ca;
    let url = format!(
        "etcds://root:hunter2@127.0.0.1:{}?tls_ca={}",
        etcd.port(),
        ca.display()
    );
    let (e, took) = refused(&url).await.unwrap();
    eprintln!("mutual TLS without a client certificate: refused after {took:?}: {e}");
    assert_connection_error(&e, took, &["tls_cert and tls_key"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_driver_reconnects_after_the_server_restarts() {
    let mut etcd = Etcd::start_tls().await.unwrap();
    let locker = Locker::new(std::sync::Arc::new(
        EtcdDriver::connect(EtcdOptions::from_url(&etcd.url()).unwrap())
            .await
            .unwrap(),
    ));
    let before = locker.try_lock("restart").await.unwrap();
    let token = before.token();
    before.release().await.unwrap();
    etcd.kill();
    etcd.restart().await.unwrap();
    let restarted = Instant::now();
    let after = locker
        .lock("restart")
        .wait(Duration::from_secs(10))
        .await
        .unwrap();
    eprintln!(
        "TLS: first grant {:?} after the restart",
        restarted.elapsed()
    );
    assert!(after.token() > token);
    after.release().await.unwrap();
}
