//! Helpers shared by the Redis test binaries.

#![allow(clippy::unwrap_used, dead_code)] // Tests fail by panicking; not every binary uses all.

/// EVALSHA calls the server at `conn` has run so far: one per script call (acquire
/// attempt, release, leave, raise).
pub(crate) async fn script_calls(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|v| v.split(',').next()?.parse().ok())
        .unwrap_or(0)
}
