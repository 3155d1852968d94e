//! Redis over TLS (`rediss://`) against real TLS-only servers from the testkit (the
//! conformance suites over TLS are in `conformance_redis.rs`): detection of a
//! cluster through a TLS node, mutual TLS, and the refusals — a server certificate
//! that does not verify, and plain TCP to the TLS port — each a typed, prompt error.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::{LockDriver, LockError, Locker};
use lockkit_redis::{RedisDriver, RedisOptions};
use lockkit_testkit::{Redis, RedisCluster};

async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
    Ok(Arc::new(
        RedisDriver::connect(RedisOptions::from_url(url)?).await?,
    ))
}

#[tokio::test]
async fn rediss_to_a_cluster_node_switches_to_the_tls_cluster() {
    let cluster = RedisCluster::start_tls(3).await.unwrap();
    let url = cluster.url();
    let (_, query) = url.split_once('?').unwrap();
    let seed = format!("rediss://127.0.0.1:{}?{query}", cluster.nodes[1].port());
    let driver = RedisDriver::connect(RedisOptions::from_url(&seed).unwrap())
        .await
        .unwrap();
    assert!(driver.is_cluster());
    let locker = Locker::new(Arc::new(driver));
    // Keys in different slots, so more than one node is reached over TLS.
    for key in ["tls:a", "tls:b", "tls:c", "tls:d", "tls:e", "tls:f"] {
        let guard = locker.try_lock(key).await.unwrap();
        guard.release().await.unwrap();
    }
}

/// How long a refused connection may take at most (the driver retries twice with a
/// 2 s connect timeout; a refusal must not wait for anything like that).
const PROMPT: Duration = Duration::from_secs(10);

/// Connects to `url`, which must fail within [`PROMPT`]; returns the error.
async fn refused(url: &str) -> LockError {
    let started = std::time::Instant::now();
    let outcome = tokio::time::timeout(PROMPT, connect(url))
        .await
        .unwrap_or_else(|_| panic!("connecting to {url} hung for {PROMPT:?}"));
    let Err(e) = outcome else {
        panic!("connecting to {url} succeeded")
    };
    eprintln!(
        "{}: refused after {:?}: {e}",
        lockkit_core::redact_url(url),
        started.elapsed()
    );
    e
}

fn assert_certificate_refusal(e: &LockError) {
    assert!(matches!(e, LockError::Connection { .. }), "{e:?}");
    let text = e.to_string().to_lowercase();
    assert!(
        text.contains("certificate") || text.contains("unknownissuer"),
        "the message should name the certificate problem: {e}"
    );
}

#[tokio::test]
async fn rediss_without_the_ca_is_refused_with_a_certificate_error() {
    let server = Redis::start_tls().await.unwrap();
    // System roots only: the throwaway CA is not among them.
    let e = refused(&format!("rediss://:hunter2@127.0.0.1:{}", server.port())).await;
    assert_certificate_refusal(&e);
    assert!(!e.to_string().contains("hunter2"), "{e}");
    assert!(!format!("{e:?}").contains("hunter2"), "{e:?}");
}

#[tokio::test]
async fn rediss_with_another_ca_is_refused() {
    let server = Redis::start_tls().await.unwrap();
    let other = Redis::start_tls().await.unwrap();
    let url = format!(
        "rediss://127.0.0.1:{}?tls_ca={}",
        server.port(),
        other.tls_files().unwrap().ca.display()
    );
    assert_certificate_refusal(&refused(&url).await);
}

#[tokio::test]
async fn plain_redis_to_the_tls_port_says_to_use_rediss() {
    let server = Redis::start_tls().await.unwrap();
    let e = refused(&format!("redis://:hunter2@127.0.0.1:{}", server.port())).await;
    assert!(matches!(e, LockError::Connection { .. }), "{e:?}");
    assert!(e.to_string().contains("use rediss://"), "{e}");
    assert!(!e.to_string().contains("hunter2"), "{e}");
}

#[tokio::test]
async fn mutual_tls_locks_with_the_client_certificate_and_is_refused_without() {
    let server = Redis::start_mutual_tls().await.unwrap();
    let locker = Locker::new(connect(&server.url()).await.unwrap());
    let guard = locker.try_lock("tls:mutual").await.unwrap();
    assert!(guard.token().0 > 0);
    guard.release().await.unwrap();

    let ca_only = format!(
        "rediss://127.0.0.1:{}?tls_ca={}",
        server.port(),
        server.tls_files().unwrap().ca.display()
    );
    let e = refused(&ca_only).await;
    assert!(matches!(e, LockError::Connection { .. }), "{e:?}");
}

async fn redlock(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
    Ok(Arc::new(
        lockkit_redis::RedlockDriver::connect(lockkit_redis::RedlockOptions::from_url(url)?)
            .await?,
    ))
}

#[tokio::test]
async fn redlocks_locks_on_five_tls_masters_with_client_certificates() {
    let masters = lockkit_testkit::RedisMasters::start_tls(5, true)
        .await
        .unwrap();
    let locker = Locker::new(redlock(&masters.url()).await.unwrap());
    let guard = locker.try_lock("tls:redlock").await.unwrap();
    assert!(guard.token().0 > 0);
    guard.release().await.unwrap();
}

#[tokio::test]
async fn plain_redlock_to_tls_masters_says_to_use_redlocks() {
    let masters = lockkit_testkit::RedisMasters::start_tls(3, false)
        .await
        .unwrap();
    let plain = masters.url().replace("redlocks://", "redlock://");
    let plain = plain.split('?').next().unwrap();
    let started = std::time::Instant::now();
    let e = redlock(plain).await.unwrap_err();
    eprintln!("refused after {:?}: {e}", started.elapsed());
    assert!(matches!(e, LockError::Connection { .. }), "{e:?}");
    assert!(e.to_string().contains("redlocks://"), "{e}");
}

#[tokio::test]
async fn redlocks_with_another_ca_is_refused_with_a_certificate_error() {
    let masters = lockkit_testkit::RedisMasters::start_tls(3, false)
        .await
        .unwrap();
    let other = Redis::start_tls().await.unwrap();
    let url = format!(
        "{}?tls_ca={}",
        masters.url().split('?').next().unwrap(),
        other.tls_files().unwrap().ca.display()
    );
    let e = redlock(&url).await.unwrap_err();
    eprintln!("{e}");
    assert_certificate_refusal(&e);
}
