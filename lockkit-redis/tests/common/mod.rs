//! Helpers shared by the Redis test binaries.

#![allow(dead_code)] // Not every test binary uses every helper.

/// EVALSHA calls the server at `conn` has run so far: one per script call (acquire
/// attempt, release, leave, raise).
pub(crate) async fn script_calls(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    calls(conn, "evalsha").await
}

/// PUBLISH calls the servers at `nodes` have run so far, from scripts too: one per
/// waiter woken.
pub(crate) async fn publishes(nodes: &mut [redis::aio::MultiplexedConnection]) -> u64 {
    let mut total = 0;
    for node in nodes {
        total += calls(node, "publish").await;
    }
    total
}

/// Calls of `command` (lower case, as `INFO commandstats` names it) the server at
/// `conn` has run so far, from scripts too.
pub(crate) async fn calls(conn: &mut redis::aio::MultiplexedConnection, command: &str) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .unwrap();
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .and_then(|v| v.split(',').next()?.parse().ok())
        .unwrap_or(0)
}

/// A connection for a test's own commands (setup, counters, faults), with a
/// 10 s reply timeout: the client's default of 500 ms fails a test on a machine
/// busy running the rest of the suite.
pub(crate) async fn admin(client: &redis::Client) -> redis::aio::MultiplexedConnection {
    client
        .get_multiplexed_async_connection_with_config(&admin_config())
        .await
        .unwrap()
}

/// The configuration of [`admin`] connections.
pub(crate) fn admin_config() -> redis::AsyncConnectionConfig {
    redis::AsyncConnectionConfig::new()
        .set_response_timeout(Some(std::time::Duration::from_secs(10)))
        .set_connection_timeout(Some(std::time::Duration::from_secs(10)))
}

/// Waits (bounded, 20 s) until `n` waiters hold a place in `key`'s queue (lockkit's
/// default prefix), asking each of `nodes` (a cluster's masters: the one serving the
/// key answers, the others redirect).
pub(crate) async fn until_queued(
    nodes: &mut [redis::aio::MultiplexedConnection],
    key: &str,
    n: usize,
) {
    let queue = format!("lockkit:{{{key}}}:queue");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let mut queued = None;
        for node in nodes.iter_mut() {
            let answer: redis::RedisResult<usize> =
                redis::cmd("ZCARD").arg(&queue).query_async(node).await;
            queued = queued.or(answer.ok());
        }
        let queued = queued.expect("a node serving the key");
        if queued == n {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{queued} waiters queued, expected {n}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// The single-server (or Cluster) driver at `url`.
pub(crate) async fn driver(url: &str) -> std::sync::Arc<lockkit_redis::RedisDriver> {
    let options = lockkit_redis::RedisOptions::from_url(url).unwrap();
    std::sync::Arc::new(lockkit_redis::RedisDriver::connect(options).await.unwrap())
}

/// A locker on the single-server (or Cluster) driver at `url`.
pub(crate) async fn locker(url: &str) -> lockkit_core::Locker {
    lockkit_core::Locker::new(driver(url).await)
}

/// A locker on the Redlock driver over the masters in `url`.
pub(crate) async fn redlock_locker(url: &str) -> lockkit_core::Locker {
    let options = lockkit_redis::RedlockOptions::from_url(url).unwrap();
    let driver = lockkit_redis::RedlockDriver::connect(options)
        .await
        .unwrap();
    lockkit_core::Locker::new(std::sync::Arc::new(driver))
}
