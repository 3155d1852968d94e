//! A user name, password or token the server refuses is a `Config` error on every
//! backend, as a setting to fix: not a `Connection` error to retry. The error
//! names what was refused and never shows the password.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use lockkit::LockError;

/// Connects to `url` and checks the refusal: a `Config` error naming `what`,
/// without `secret`.
async fn refused(url: &str, what: &str, secret: &str) {
    let err = match lockkit::connect(url).await {
        Ok(_) => panic!(
            "{}: connected with refused credentials",
            lockkit::redact_url(url)
        ),
        Err(e) => e,
    };
    let text = format!("{err} {err:?}");
    assert!(
        matches!(err, LockError::Config(_)),
        "{}: expected a Config error, got {err:?}",
        lockkit::redact_url(url)
    );
    assert!(
        text.contains(what),
        "the error does not name the {what}: {text}"
    );
    assert!(!text.contains(secret), "the password is shown: {text}");
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_refusing_a_password_is_a_config_error() {
    let server = lockkit_testkit::Redis::start().await.unwrap();
    server.ask("CONFIG SET requirepass right").await.unwrap();
    let url = server.url().replacen("://", "://:wrong-pw@", 1);
    refused(&url, "credentials", "wrong-pw").await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_refusing_a_user_is_a_config_error() {
    let server = lockkit_testkit::Postgres::start().await.unwrap();
    let url = server
        .url()
        .replacen("://postgres@", "://no_such_role:wrong-pw@", 1);
    assert_ne!(url, server.url(), "the testkit's URL changed shape");
    refused(&url, "credentials", "wrong-pw").await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_refusing_a_database_is_a_config_error() {
    let server = lockkit_testkit::Postgres::start().await.unwrap();
    let url = server.url();
    let (base, _db) = url.rsplit_once('/').unwrap();
    refused(&format!("{base}/no_such_database"), "database", "\u{0}").await;
}

#[cfg(feature = "mysql")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_refusing_a_password_is_a_config_error() {
    let server = lockkit_testkit::MariaDb::start().await.unwrap();
    let url = server.url().replacen("://root@", "://root:wrong-pw@", 1);
    assert_ne!(url, server.url(), "the testkit's URL changed shape");
    refused(&url, "credentials", "wrong-pw").await;
}

#[cfg(feature = "mysql")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_refusing_a_database_is_a_config_error() {
    let server = lockkit_testkit::MariaDb::start().await.unwrap();
    let url = server.url();
    let (base, _db) = url.rsplit_once('/').unwrap();
    refused(&format!("{base}/no_such_database"), "database", "\u{0}").await;
}

/// MySQL has no default database: a URL without one is refused before any
/// connection, instead of failing the first lock with `1046 No database selected`.
#[cfg(feature = "mysql")]
#[tokio::test]
async fn a_mysql_url_without_a_database_is_refused_at_connect() {
    for url in ["mysql://root@127.0.0.1:1", "mariadb://root@127.0.0.1:1/"] {
        let err = lockkit::connect(url).await.err().unwrap();
        assert!(
            matches!(err, LockError::InvalidUrl { .. }),
            "{url}: {err:?}"
        );
        assert!(
            err.to_string().contains("names no database"),
            "{url}: {err}"
        );
    }
}

#[cfg(feature = "etcd")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_refusing_a_password_is_a_config_error() {
    let server = lockkit_testkit::Etcd::start().await.unwrap();
    for args in [
        &["user", "add", "root:right-pw"][..],
        &["auth", "enable"][..],
    ] {
        let out = server.etcdctl().unwrap().args(args).output().await.unwrap();
        assert!(out.status.success(), "etcdctl {args:?}: {out:?}");
    }
    let url = server.url().replacen("://", "://root:wrong-pw@", 1);
    refused(&url, "credentials", "wrong-pw").await;
    let right = server.url().replacen("://", "://root:right-pw@", 1);
    lockkit::connect(&right).await.unwrap();
}

#[cfg(feature = "consul")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consul_refusing_a_token_is_a_config_error() {
    use lockkit_testkit::{ConsulStandIn, StandInOptions};
    let server = ConsulStandIn::start_with(StandInOptions::default().with_acl_token("right"))
        .await
        .unwrap();
    let url = server.url().replacen("://", "://wrong-token@", 1);
    refused(&url, "token", "wrong-token").await;
}
