//! A queue of waiters behind one holder: hand-off latency down the queue, and (on
//! Redis) the requests the server saw per hand-off.

use std::time::{Duration, Instant};

use lockkit::LockError;
use serde::Serialize;

use super::measure::{Latency, histogram, record, summary};

/// Hand-offs down a queue of waiters, each on its own connection.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Queue {
    pub(crate) waiters: u64,
    pub(crate) handoff: Latency,
    /// Requests clients sent per hand-off (Redis only, from INFO commandstats):
    /// EVALSHA, SUBSCRIBE and the like, each one round trip, divided by the number
    /// of hand-offs.
    pub(crate) commands_per_handoff: Option<f64>,
    /// Every command the server ran per hand-off, counting those run inside the Lua
    /// scripts (which Redis counts in INFO commandstats too).
    pub(crate) all_commands_per_handoff: Option<f64>,
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

/// Command calls the Redis server has run (INFO commandstats): `(requests sent by
/// clients, all commands including those run inside scripts)`.
async fn redis_calls(url: &str) -> Option<(u64, u64)> {
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
    let (mut requests, mut all) = (0, 0);
    for line in info.lines() {
        let Some((name, stats)) = line
            .strip_prefix("cmdstat_")
            .and_then(|l| l.split_once(':'))
        else {
            continue;
        };
        let Some(calls) = stats
            .split(',')
            .find_map(|kv| kv.strip_prefix("calls="))
            .and_then(|v| v.parse::<u64>().ok())
        else {
            continue;
        };
        all += calls;
        if REDIS_REQUESTS.contains(&name.split('|').next().unwrap_or(name)) {
            requests += calls;
        }
    }
    Some((requests, all))
}

/// `waiters` clients queue behind one holder; each takes the lock once. Hand-off
/// = release by one → grant to the next.
pub(crate) async fn queue(url: &str, waiters: u64) -> Result<Option<Queue>, LockError> {
    if waiters == 0 {
        return Ok(None);
    }
    let key: std::sync::Arc<str> = crate::scratch::key("queue").into();
    let holder = lockkit::connect(url).await?;
    let mut lockers = Vec::new();
    for _ in 0..waiters {
        lockers.push(lockkit::connect(url).await?);
    }
    let held = holder.lock(&*key).wait(Duration::from_secs(10)).await?;
    // From here on, every request counts: each waiter's first (queuing) attempt, the
    // wake-ups, the grants and the releases.
    let before = redis_calls(url).await;
    let last_release = std::sync::Arc::new(tokio::sync::Mutex::new(Instant::now()));
    let mut tasks = Vec::new();
    for locker in lockers {
        let (last_release, key) = (last_release.clone(), key.clone());
        tasks.push(tokio::spawn(async move {
            let g = locker.lock(&*key).wait(Duration::from_secs(120)).await?;
            let mut last = last_release.lock().await;
            let handoff = last.elapsed();
            *last = Instant::now();
            drop(last);
            g.release().await?;
            Ok::<_, LockError>(handoff)
        }));
    }
    // Let every waiter reach its wait (a benchmark settle, not a correctness bet).
    tokio::time::sleep(Duration::from_millis(500)).await;
    *last_release.lock().await = Instant::now();
    held.release().await?;
    let mut h = histogram()?;
    let mut total = Duration::ZERO;
    for t in tasks {
        let d = t
            .await
            .map_err(|e| LockError::Config(format!("a queued waiter crashed: {e}")))??;
        total += d;
        record(&mut h, d);
    }
    let after = redis_calls(url).await;
    // Minus the INFO call itself.
    let per_handoff = |b: u64, a: u64| a.saturating_sub(b + 1) as f64 / waiters as f64;
    let (commands_per_handoff, all_commands_per_handoff) = match (before, after) {
        (Some(b), Some(a)) => (Some(per_handoff(b.0, a.0)), Some(per_handoff(b.1, a.1))),
        _ => (None, None),
    };
    Ok(Some(Queue {
        waiters,
        handoff: summary(&h, total),
        commands_per_handoff,
        all_commands_per_handoff,
    }))
}
