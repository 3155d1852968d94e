//! A TLS URL pointed at a server that speaks plain TCP fails `connect` with a
//! `Connection` error that says so and names the fix, on every backend with a
//! TLS scheme, instead of a bare handshake error.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit::LockError;

/// Connects to `url` and checks the error hints at plain TCP.
async fn hints_plain(url: &str, plain_scheme: &str) {
    let outcome = tokio::time::timeout(Duration::from_secs(30), lockkit::connect(url)).await;
    let err = match outcome {
        Err(_) => panic!("{url}: still connecting after 30 s"),
        Ok(Ok(_)) => panic!("{url}: connected over TLS to a plain server"),
        Ok(Err(e)) => e,
    };
    eprintln!("{url}: {err}");
    assert!(
        matches!(err, LockError::Connection { .. }),
        "{url}: expected a Connection error, got {err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("does not speak TLS") && text.contains(plain_scheme),
        "{url}: no hint that the server speaks plain TCP ({plain_scheme}): {text}"
    );
}

/// `url` with its scheme's TLS form (`redis://` → `rediss://`) and `query`.
fn over_tls(url: &str, tls_scheme: &str, query: &str) -> String {
    let (_, rest) = url.split_once("://").unwrap();
    format!("{tls_scheme}://{rest}{query}")
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rediss_to_a_plain_redis_hints_at_redis_scheme() {
    let server = lockkit_testkit::Redis::start().await.unwrap();
    hints_plain(&over_tls(&server.url(), "rediss", ""), "use redis://").await;
    let masters = lockkit_testkit::RedisMasters::start(1).await.unwrap();
    hints_plain(&over_tls(&masters.url(), "redlocks", ""), "use redlock://").await;
}

#[cfg(feature = "etcd")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcds_to_a_plain_etcd_hints_at_etcd_scheme() {
    let server = lockkit_testkit::Etcd::start().await.unwrap();
    hints_plain(&over_tls(&server.url(), "etcds", ""), "use etcd://").await;
}

#[cfg(feature = "zk")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zks_to_a_plain_zookeeper_hints_at_zk_scheme() {
    let server = lockkit_testkit::ZooKeeper::start_tls(false).await.unwrap();
    let plain = server.url();
    let ca = plain.split_once("?").unwrap().1.to_owned();
    let zk = lockkit_testkit::ZooKeeper::start().await.unwrap();
    hints_plain(&over_tls(&zk.url(), "zks", &format!("?{ca}")), "use zk://").await;
}

#[cfg(feature = "consul")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consuls_to_a_plain_consul_hints_at_consul_scheme() {
    let server = lockkit_testkit::ConsulStandIn::start().await.unwrap();
    hints_plain(&over_tls(&server.url(), "consuls", ""), "use consul://").await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_requiring_tls_of_a_plain_server_hints_at_sslmode() {
    let server = lockkit_testkit::Postgres::start().await.unwrap();
    hints_plain(
        &format!("{}?sslmode=require", server.url()),
        "sslmode=disable",
    )
    .await;
}

#[cfg(feature = "mysql")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_requiring_tls_of_a_plain_server_hints_at_ssl_mode() {
    let server = lockkit_testkit::MariaDb::start().await.unwrap();
    hints_plain(
        &format!("{}?ssl-mode=REQUIRED", server.url()),
        "ssl-mode=DISABLED",
    )
    .await;
}
