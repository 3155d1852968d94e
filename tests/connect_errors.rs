//! A failed connect says why, once, and what to change: the cause the client
//! library buried ("connection refused" under "pool timed out" or "error sending
//! request"), never a raw dump of its error types, never a doubled prefix.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use lockkit::LockError;

/// A 127.0.0.1 port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
    // Dropped here: the port is closed again.
}

/// Connecting to `url` (with `{port}` closed) fails with a `Connection` error that
/// says the connection was refused, names its driver once, and dumps no types.
async fn refused_is_said_once(url: &str) {
    let url = url.replace("{port}", &closed_port().to_string());
    let err = lockkit::connect(&url).await.unwrap_err();
    let text = err.to_string();
    eprintln!("{url}: {text}");
    assert!(
        matches!(err, LockError::Connection { .. }),
        "{url}: expected a Connection error, got {err:?}"
    );
    assert!(
        text.to_ascii_lowercase().contains("refused"),
        "{url}: the cause is lost: {text}"
    );
    assert_eq!(
        text.matches("connection error (").count(),
        1,
        "{url}: a doubled prefix: {text}"
    );
    for dump in [
        "Error(",
        "tonic::",
        "Transport,",
        "ConnectError",
        "pool timed out",
    ] {
        assert!(!text.contains(dump), "{url}: `{dump}` in {text}");
    }
}

macro_rules! closed_port_tests {
    ($($feature:literal, $name:ident: $url:literal;)*) => {
        $(
            #[cfg(feature = $feature)]
            #[tokio::test]
            async fn $name() {
                refused_is_said_once($url).await;
            }
        )*
    };
}

closed_port_tests! {
    "redis", redis_on_a_closed_port_says_refused: "redis://127.0.0.1:{port}";
    "redis", redlock_on_a_closed_port_says_refused: "redlock://127.0.0.1:{port}";
    "etcd", etcd_on_a_closed_port_says_refused: "etcd://127.0.0.1:{port}";
    "zk", zookeeper_on_a_closed_port_says_refused: "zk://127.0.0.1:{port}";
    "consul", consul_on_a_closed_port_says_refused: "consul://127.0.0.1:{port}?lock_delay_ms=0";
    "postgres", postgres_on_a_closed_port_says_refused: "postgres://u@127.0.0.1:{port}/db";
    "mysql", mysql_on_a_closed_port_says_refused: "mysql://u@127.0.0.1:{port}/db";
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn redis_port_out_of_range_is_an_invalid_url_naming_the_port() {
    let err = lockkit::connect("redis://127.0.0.1:99999")
        .await
        .unwrap_err();
    assert!(matches!(err, LockError::InvalidUrl { .. }), "{err:?}");
    assert!(err.to_string().contains("invalid port"), "{err}");
    assert!(!err.to_string().contains("InvalidClientConfig"), "{err}");
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn redis_database_out_of_range_is_a_config_error_not_a_dead_server() {
    let redis = lockkit_testkit::Redis::start().await.unwrap();
    let err = lockkit::connect(&format!("{}/99", redis.url()))
        .await
        .unwrap_err();
    assert!(matches!(err, LockError::Config(_)), "{err:?}");
    assert!(err.to_string().contains("database"), "{err}");
    assert!(err.to_string().contains("0 to 15"), "{err}");
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn redis_database_that_is_not_a_number_is_an_invalid_url() {
    let err = lockkit::connect("redis://127.0.0.1:6379/zero")
        .await
        .unwrap_err();
    assert!(matches!(err, LockError::InvalidUrl { .. }), "{err:?}");
    assert!(err.to_string().contains("database index"), "{err}");
}
