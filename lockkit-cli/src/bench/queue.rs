//! A queue of waiters behind one holder (or a semaphore's `limit` holders):
//! hand-off latency down the queue, and (on Redis) the requests the server saw per
//! hand-off and the wake-ups per release.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lockkit::{LockError, Locker};
use serde::Serialize;

use super::measure::{Latency, histogram, record, summary};
use super::modes::Mode;
use super::server_stats::{redis_calls, zk_packets_received};

use lockkit_core::sync::lock;

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
    /// Wake-ups (PUBLISH, run inside the release scripts) per release (Redis only):
    /// at most 1 means no herd.
    pub(crate) publishes_per_release: Option<f64>,
    /// Packets the server received per release (ZooKeeper only, from `mntr`): a
    /// herd would add one or more per waiter still queued.
    pub(crate) packets_per_release: Option<f64>,
}

/// `waiters` clients queue behind one holder of the lock, or behind `limit`
/// holders of a semaphore; each takes it once, then releases. A hand-off is the
/// time from a release to the next grant.
pub(crate) async fn queue(
    url: &str,
    waiters: u64,
    limit: Option<u32>,
) -> Result<Option<Queue>, LockError> {
    if waiters == 0 {
        return Ok(None);
    }
    let key: Arc<str> = match limit {
        None => crate::scratch::key("queue"),
        Some(_) => Mode::Semaphore.key("queue"),
    }
    .into();
    let take = move |locker: Locker, key: Arc<str>, wait: Duration| async move {
        match limit {
            None => locker.lock(&*key).wait(wait).await,
            Some(limit) => Mode::Semaphore.take(&locker, &key, limit, wait).await,
        }
    };
    let mut held = Vec::new();
    for _ in 0..limit.unwrap_or(1) {
        let holder = lockkit::connect(url).await?;
        held.push(take(holder, key.clone(), Duration::from_secs(10)).await?);
    }
    let mut lockers = Vec::new();
    for _ in 0..waiters {
        lockers.push(lockkit::connect(url).await?);
    }
    // From here on, every request counts: each waiter's first (queuing) attempt, the
    // wake-ups, the grants and the releases.
    let before = redis_calls(url).await;
    let packets_before = zk_packets_received(url).await;
    let releases: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let mut tasks = Vec::new();
    for locker in lockers {
        let (releases, key) = (releases.clone(), key.clone());
        tasks.push(tokio::spawn(async move {
            let g = take(locker, key, Duration::from_secs(120)).await?;
            let granted = Instant::now();
            g.release().await?;
            lock(&releases).push(Instant::now());
            Ok::<_, LockError>(granted)
        }));
    }
    // Let every waiter reach its wait (a benchmark settle, not a correctness bet).
    tokio::time::sleep(Duration::from_millis(500)).await;
    for g in held {
        g.release().await?;
        lock(&releases).push(Instant::now());
    }
    let mut grants = Vec::new();
    for t in tasks {
        grants.push(
            t.await
                .map_err(|e| LockError::Config(format!("a queued waiter crashed: {e}")))??,
        );
    }
    let after = redis_calls(url).await;
    let packets_after = zk_packets_received(url).await;
    // Each grant's hand-off: from the latest release before it.
    let releases = lock(&releases).clone();
    let mut h = histogram()?;
    let mut total = Duration::ZERO;
    for granted in grants {
        if let Some(released) = releases.iter().filter(|r| **r <= granted).max() {
            let d = granted - *released;
            total += d;
            record(&mut h, d);
        }
    }
    // Minus the INFO call itself.
    let per = |b: u64, a: u64, n: u64| a.saturating_sub(b + 1) as f64 / n as f64;
    let released = waiters + u64::from(limit.unwrap_or(1));
    let calls = before.zip(after);
    Ok(Some(Queue {
        waiters,
        handoff: summary(&h, total),
        commands_per_handoff: calls.map(|(b, a)| per(b.requests, a.requests, waiters)),
        all_commands_per_handoff: calls.map(|(b, a)| per(b.all, a.all, waiters)),
        packets_per_release: packets_before
            .zip(packets_after)
            .map(|(b, a)| a.saturating_sub(b) as f64 / released as f64),
        publishes_per_release: calls
            .map(|(b, a)| a.publishes.saturating_sub(b.publishes) as f64 / released as f64),
    }))
}
