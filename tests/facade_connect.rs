//! `lockkit::connect` picks drivers by scheme and explains bad URLs.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

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
async fn a_mistyped_scheme_gets_a_did_you_mean() {
    for (url, near) in [
        ("postgre://u@h/db", "postgres://"),
        ("reddis://h:6379", "redis://"),
        ("sqlit://x.db", "sqlite://"),
    ] {
        let r = reason(url, lockkit::connect(url).await.unwrap_err());
        assert!(r.contains(&format!("did you mean `{near}`")), "{url}: {r}");
    }
}

#[tokio::test]
async fn a_host_without_a_scheme_gets_one_suggested_by_its_port() {
    for (url, suggested) in [
        ("127.0.0.1:6379", "redis://127.0.0.1:6379"),
        ("localhost:2379", "etcd://localhost:2379"),
        ("10.0.0.5:5432", "postgres://10.0.0.5:5432"),
    ] {
        let r = reason(url, lockkit::connect(url).await.unwrap_err());
        assert!(
            r.contains(&format!("did you mean `{suggested}`")),
            "{url}: {r}"
        );
    }
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn schemes_are_case_insensitive() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("SQLITE://{}", dir.path().join("l.db").display());
    let locker = lockkit::connect(&url).await.unwrap();
    assert_eq!(locker.driver().name(), "sqlite");
}

/// A mistyped option is never ignored: it could turn a safety setting off
/// (`fence_sed=clock`) without a word.
#[tokio::test]
async fn every_driver_names_an_unknown_option_and_the_known_ones() {
    let cases: &[(&str, &str)] = &[
        #[cfg(feature = "redis")]
        ("redis://127.0.0.1:1?fence_sed=clock", "fence_seed"),
        #[cfg(feature = "redis")]
        ("redis-cluster://127.0.0.1:1,127.0.0.1:2?wak=poll", "wake"),
        #[cfg(feature = "redis")]
        (
            "redlock://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3?drift=5",
            "drift_ms",
        ),
        #[cfg(feature = "etcd")]
        ("etcd://127.0.0.1:1?prefx=a", "prefix"),
        #[cfg(feature = "zk")]
        (
            "zk://127.0.0.1:1?session_timout_ms=1000",
            "session_timeout_ms",
        ),
        #[cfg(feature = "consul")]
        ("consul://127.0.0.1:1?lock_dely_ms=0", "lock_delay_ms"),
        #[cfg(feature = "postgres")]
        ("postgres://u@127.0.0.1:1/db?tabel=t", "table"),
        #[cfg(feature = "mysql")]
        ("mysql://u@127.0.0.1:1/db?sslmod=required", "sslmode"),
        #[cfg(feature = "sqlite")]
        ("sqlite://x.db?busy_timeout=5", "busy_timeout_ms"),
    ];
    for (url, near) in cases {
        let r = reason(url, lockkit::connect(url).await.unwrap_err());
        assert!(r.contains("unknown option"), "{url}: {r}");
        assert!(r.contains(&format!("did you mean `{near}`")), "{url}: {r}");
        assert!(r.contains("the options are:"), "{url}: {r}");
    }
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
