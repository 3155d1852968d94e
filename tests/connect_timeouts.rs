//! Every networked driver gives up on a server that accepts connections and never
//! answers, within 1.2 × its connect timeout (a URL option with a default), with a
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

/// The most a connect may take: 1.2 × its connect timeout, and a little for the
/// scheduler of a busy 2-core machine.
fn limit(connect_timeout: Duration) -> Duration {
    connect_timeout * 6 / 5 + Duration::from_millis(100)
}

/// With both timeouts at 300 ms, `connect` gives up within 1.2 × the connect
/// timeout, however many steps and attempts it makes, and says why.
async fn honours_short_timeouts(url: &str) {
    let sep = if url.contains('?') { '&' } else { '?' };
    let url = format!(
        "{url}{sep}connect_timeout_ms={0}&request_timeout_ms={0}",
        SHORT.as_millis()
    );
    let (err, took) = against_a_silent_server(&url).await;
    assert!(
        took <= limit(SHORT),
        "{url}: gave up after {took:?}; limit {:?}",
        limit(SHORT)
    );
    let text = err.to_string();
    assert!(
        text.contains("no answer") || text.contains("timed out") || text.contains("timeout"),
        "{url}: the error does not say it timed out: {text}"
    );
}

/// With the default timeouts, `connect` gives up within 1.2 × the default connect
/// timeout.
async fn honours_default_timeouts(url: &str, connect_timeout_ms: u64) {
    let (_, took) = against_a_silent_server(url).await;
    let limit = limit(Duration::from_millis(connect_timeout_ms));
    assert!(
        took <= limit,
        "{url}: gave up after {took:?}; limit {limit:?}"
    );
}

macro_rules! silent_server_tests {
    ($($feature:literal, $name:ident: $url:literal, $default_ms:literal;)*) => {
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
                    honours_default_timeouts($url, $default_ms).await;
                }
            }
        )*
    };
}

silent_server_tests! {
    "redis", redis: "redis://127.0.0.1:{port}", 2000;
    "redis", redis_cluster: "redis-cluster://127.0.0.1:{port}", 2000;
    "redis", redlock: "redlock://127.0.0.1:{port}", 1000;
    "etcd", etcd: "etcd://127.0.0.1:{port}", 5000;
    "zk", zookeeper: "zk://127.0.0.1:{port}", 5000;
    "consul", consul: "consul://127.0.0.1:{port}", 5000;
    "postgres", postgres: "postgres://u@127.0.0.1:{port}/db", 5000;
    "mysql", mysql: "mysql://u@127.0.0.1:{port}/db", 5000;
}
