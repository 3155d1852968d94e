//! What a server counted while `bench` ran: Redis's INFO commandstats, and
//! ZooKeeper's `mntr` packet count.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Command calls the Redis server has run, from INFO commandstats.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Calls {
    /// Sent by clients.
    pub(crate) requests: u64,
    /// Every command, including those run inside scripts.
    pub(crate) all: u64,
    pub(crate) publishes: u64,
}

/// Commands a Redis client sends itself; every other command in INFO commandstats
/// ran inside a Lua script (Redis counts those too).
const REDIS_REQUESTS: &[&str] = &[
    "evalsha",
    "eval",
    "script",
    "subscribe",
    "unsubscribe",
    "psubscribe",
    "info",
    "ping",
    "client",
    "hello",
    "select",
    "cluster",
    "readonly",
];

/// Command calls the Redis server has run (INFO commandstats).
pub(crate) async fn redis_calls(url: &str) -> Option<Calls> {
    let (url, _) = url.split_once('?').unwrap_or((url, ""));
    let mut conn = redis::Client::open(url)
        .ok()?
        .get_multiplexed_async_connection()
        .await
        .ok()?;
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut conn)
        .await
        .ok()?;
    let mut calls = Calls {
        requests: 0,
        all: 0,
        publishes: 0,
    };
    for line in info.lines() {
        let Some((name, stats)) = line
            .strip_prefix("cmdstat_")
            .and_then(|l| l.split_once(':'))
        else {
            continue;
        };
        let Some(n) = stats
            .split(',')
            .find_map(|kv| kv.strip_prefix("calls="))
            .and_then(|v| v.parse::<u64>().ok())
        else {
            continue;
        };
        calls.all += n;
        let command = name.split('|').next().unwrap_or(name);
        if REDIS_REQUESTS.contains(&command) {
            calls.requests += n;
        }
        if command == "publish" {
            calls.publishes += n;
        }
    }
    Some(calls)
}

/// The packets the ZooKeeper server of a `zk://` URL has received (its first
/// host's `mntr`: `zk_packets_received`; the server must allow the command).
pub(crate) async fn zk_packets_received(url: &str) -> Option<u64> {
    let rest = url.strip_prefix("zk://")?;
    let hosts = rest.split(['/', '?']).next()?;
    let host = hosts.split(',').next()?;
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let mut conn = tokio::net::TcpStream::connect(host).await.ok()?;
    conn.write_all(b"mntr").await.ok()?;
    let mut out = String::new();
    conn.read_to_string(&mut out).await.ok()?;
    out.lines()
        .find_map(|l| l.strip_prefix("zk_packets_received"))
        .and_then(|v| v.trim().parse().ok())
}
