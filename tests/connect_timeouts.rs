//! Every networked driver gives up on a server that accepts connections and never
//! answers, within its connect timeout (a URL option with a default), with a
//! `Connection` error that says so, instead of hanging.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit::LockError;
use lockkit_testkit::SilentServer;
use tokio::time::Instant;

/// `connect_timeout_ms` and `request_timeout_ms`, both this short.
const SHORT: Duration = Duration::from_millis(300);

/// Connects to `url` (its `{port}` replaced by a silent server's) and returns the
/// error and how long it took.
async fn against_a_silent_server(url: &str) -> (LockError, Duration) {
    let silent = SilentServer::start().await.unwrap();
    let url = url.replace("{port}", &silent.port().to_string());
    let started = Instant::now();
    let outcome = tokio::time::timeout(Duration::from_secs(120), lockkit::connect(&url)).await;
    let took = started.elapsed();
    let err = match outcome {
        Err(_) => panic!("{url}: still connecting after {took:?}"),
        Ok(Ok(_)) => panic!("{url}: connected to a server that never answers"),
        Ok(Err(e)) => e,
    };
    eprintln!("{url}: gave up after {took:?}: {err}");
    assert!(silent.accepted() > 0, "{url}: never reached the server");
    assert!(
        matches!(err, LockError::Connection { .. }),
        "{url}: expected a Connection error, got {err:?}"
    );
    (err, took)
}

/// With both timeouts at 300 ms, `connect` gives up well within a few of them (a
/// client may retry a connection once or twice), and says why.
async fn honours_short_timeouts(url: &str) {
    let sep = if url.contains('?') { '&' } else { '?' };
    let url = format!(
        "{url}{sep}connect_timeout_ms={0}&request_timeout_ms={0}",
        SHORT.as_millis()
    );
    let (err, took) = against_a_silent_server(&url).await;
    let limit = SHORT * 10 + Duration::from_secs(2);
    assert!(
        took <= limit,
        "{url}: gave up after {took:?}; limit {limit:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("no answer") || text.contains("timed out") || text.contains("timeout"),
        "{url}: the error does not say it timed out: {text}"
    );
}

/// With the default timeouts, `connect` gives up within the defaults (at most 10 s
/// each), not minutes later.
async fn honours_default_timeouts(url: &str) {
    let (_, took) = against_a_silent_server(url).await;
    let limit = Duration::from_secs(40);
    assert!(
        took <= limit,
        "{url}: gave up after {took:?}; limit {limit:?}"
    );
}

macro_rules! silent_server_tests {
    ($($feature:literal, $name:ident: $url:literal;)*) => {
        $(
            #[cfg(feature = $feature)]
            mod $name {
                use super::*;

                #[tokio::test]
                async fn gives_up_within_its_connect_and_request_timeouts() {
                    honours_short_timeouts($url).await;
                }

                #[tokio::test]
                async fn gives_up_within_its_default_timeouts() {
                    honours_default_timeouts($url).await;
                }
            }
        )*
    };
}

silent_server_tests! {
    "redis", redis: "redis://127.0.0.1:{port}";
    "redis", redis_cluster: "redis-cluster://127.0.0.1:{port}";
    "redis", redlock: "redlock://127.0.0.1:{port}";
    "etcd", etcd: "etcd://127.0.0.1:{port}";
    "zk", zookeeper: "zk://127.0.0.1:{port}";
    "consul", consul: "consul://127.0.0.1:{port}";
    "postgres", postgres: "postgres://u@127.0.0.1:{port}/db";
    "mysql", mysql: "mysql://u@127.0.0.1:{port}/db";
}
