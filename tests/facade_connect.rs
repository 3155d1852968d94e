//! `lockkit::connect` picks drivers by scheme and explains bad URLs.

#![allow(clippy::unwrap_used, clippy::panic)] // Tests fail by panicking.

use lockkit::LockError;

fn reason(url: &str, err: LockError) -> String {
    match err {
        LockError::InvalidUrl { reason, .. } => reason,
        other => panic!("{url}: expected InvalidUrl, got {other:?}"),
    }
}

#[tokio::test]
async fn unknown_scheme_names_the_compiled_in_schemes() {
    let r = reason("nope://x", lockkit::connect("nope://x").await.unwrap_err());
    assert!(r.contains("unknown scheme `nope`"), "{r}");
    assert!(r.contains("sqlite"), "{r}");
}

/// Runs in the default build (`ci/test` runs this file with default features too).
#[cfg(not(feature = "zk"))]
#[tokio::test]
async fn missing_feature_is_named() {
    // The default build has no zk driver: the message names the feature to enable.
    let r = reason(
        "zk://h",
        lockkit::connect("zk://127.0.0.1:1").await.unwrap_err(),
    );
    assert!(r.contains("`zk` feature"), "{r}");
}

#[tokio::test]
async fn url_without_scheme_is_rejected() {
    for url in ["", "locks.db", "://x", "/tmp/x.db"] {
        let r = reason(url, lockkit::connect(url).await.unwrap_err());
        assert!(r.contains("no scheme"), "{url}: {r}");
    }
}

#[tokio::test]
async fn secrets_never_appear_in_errors() {
    let err = lockkit::connect("redis://user:hunter2@127.0.0.1:1/?token=s3cret")
        .await
        .unwrap_err();
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(!shown.contains("s3cret"), "{shown}");
}

#[cfg(feature = "etcd")]
#[tokio::test]
async fn etcd_tls_url_to_a_dead_endpoint_is_a_connection_error_without_the_password() {
    let err = lockkit::connect("etcds://root:hunter2@127.0.0.1:1")
        .await
        .unwrap_err();
    assert!(matches!(err, LockError::Connection { .. }), "{err:?}");
    assert!(!format!("{err} {err:?}").contains("hunter2"));
}

#[cfg(feature = "zk")]
#[tokio::test]
async fn zk_url_to_a_dead_server_is_a_connection_error_without_the_password() {
    let err = lockkit::connect("zk://app:hunter2@127.0.0.1:1/chroot?session_timeout_ms=1000")
        .await
        .unwrap_err();
    assert!(matches!(err, LockError::Connection { .. }), "{err:?}");
    assert!(!format!("{err} {err:?}").contains("hunter2"));
}

#[cfg(feature = "consul")]
#[tokio::test]
async fn consul_url_to_a_dead_agent_is_a_connection_error_without_the_token() {
    let err = lockkit::connect("consul://s3cret-token@127.0.0.1:1?lock_delay_ms=0")
        .await
        .unwrap_err();
    assert!(matches!(err, LockError::Connection { .. }), "{err:?}");
    assert!(!format!("{err} {err:?}").contains("s3cret"));
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn sqlite_url_connects_and_locks() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("l.db").display());
    let locker = lockkit::connect(&url).await.unwrap();
    let g = locker.try_lock("k").await.unwrap();
    assert_eq!(locker.driver().name(), "sqlite");
    g.release().await.unwrap();
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn sqlite_in_a_missing_directory_is_a_config_error() {
    let err = lockkit::connect("sqlite:///no/such/dir/l.db")
        .await
        .unwrap_err();
    assert!(matches!(err, LockError::Config(_)), "{err:?}");
    assert!(err.to_string().contains("/no/such/dir"), "{err}");
}

#[cfg(feature = "mem")]
#[tokio::test]
async fn mem_url_connects_and_shares_by_name() {
    let a = lockkit::connect("mem://facade-test").await.unwrap();
    let b = lockkit::connect("mem://facade-test").await.unwrap();
    let g = a.try_lock("k").await.unwrap();
    assert!(matches!(
        b.try_lock("k").await,
        Err(LockError::Contended { .. })
    ));
    g.release().await.unwrap();
}
