//! Helpers shared by the Redis test binaries.

#![allow(dead_code)] // Not every test binary uses every helper.

/// EVALSHA calls the server at `conn` has run so far: one per script call (acquire
/// attempt, release, leave, raise).
pub(crate) async fn script_calls(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    calls(conn, "evalsha").await
}

/// PUBLISH calls the server at `conn` has run so far, from scripts too: one per
/// waiter woken.
pub(crate) async fn publishes(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    calls(conn, "publish").await
}

async fn calls(conn: &mut redis::aio::MultiplexedConnection, command: &str) -> u64 {
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
