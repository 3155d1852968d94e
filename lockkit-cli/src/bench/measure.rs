//! The measurements: latency histograms, hand-offs, waiter queues and throughput.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use indicatif::ProgressBar;
use lockkit::{LockError, Locker};
use serde::Serialize;
use tokio::task::JoinSet;

use super::floor::Floor;

/// A latency distribution, in microseconds.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Latency {
    pub(crate) samples: u64,
    pub(crate) p50_us: u64,
    pub(crate) p90_us: u64,
    pub(crate) p99_us: u64,
    pub(crate) max_us: u64,
    pub(crate) ops_per_second: f64,
    /// `[percentile, µs]` points of the distribution (0 to 100), for plots.
    pub(crate) cdf: Vec<(f64, u64)>,
}

/// Grants per second with several clients.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Throughput {
    pub(crate) clients: u64,
    pub(crate) keys: u64,
    pub(crate) seconds: f64,
    pub(crate) grants: u64,
    /// Acquire attempts (a spinning floor makes more attempts than it gets grants).
    pub(crate) attempts: u64,
    pub(crate) grants_per_second: f64,
}

pub(crate) fn histogram() -> Result<Histogram<u64>, LockError> {
    Histogram::new_with_bounds(1, 600_000_000, 3)
        .map_err(|e| LockError::Config(format!("histogram: {e}")))
}

pub(crate) fn record(h: &mut Histogram<u64>, d: Duration) {
    h.saturating_record((d.as_micros() as u64).max(1));
}

/// Times one call of `f` into `h`.
pub(crate) async fn time_one<F, Fut>(h: &mut Histogram<u64>, f: F) -> Result<Duration, LockError>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<(), LockError>>,
{
    let t = Instant::now();
    f().await?;
    let d = t.elapsed();
    record(h, d);
    Ok(d)
}

/// Percentiles of `h`; `total` is the time the samples took back to back.
pub(crate) fn summary(h: &Histogram<u64>, total: Duration) -> Latency {
    let mut cdf: Vec<(f64, u64)> = (0..=100)
        .map(|p| (f64::from(p), h.value_at_quantile(f64::from(p) / 100.0)))
        .collect();
    cdf.insert(cdf.len() - 1, (99.9, h.value_at_quantile(0.999)));
    Latency {
        samples: h.len(),
        p50_us: h.value_at_quantile(0.5),
        p90_us: h.value_at_quantile(0.9),
        p99_us: h.value_at_quantile(0.99),
        max_us: h.max(),
        ops_per_second: h.len() as f64 / total.as_secs_f64().max(1e-9),
        cdf,
    }
}

/// Release → grant latency to a waiter on another connection, `n` times.
pub(crate) async fn handoffs(
    url: &str,
    n: u64,
    bar: &ProgressBar,
) -> Result<Option<Latency>, LockError> {
    if n == 0 {
        return Ok(None);
    }
    let holder = lockkit::connect(url).await?;
    let waiter = lockkit::connect(url).await?;
    let key: std::sync::Arc<str> = crate::scratch::key("handoff").into();
    let mut h = histogram()?;
    let mut total = Duration::ZERO;
    for _ in 0..n {
        let held = holder.lock(&*key).wait(Duration::from_secs(10)).await?;
        let (w, k) = (waiter.clone(), key.clone());
        let waiting = tokio::spawn(async move {
            let g = w.lock(&*k).wait(Duration::from_secs(10)).await;
            (Instant::now(), g)
        });
        // Let the waiter reach its wait before the release (a benchmark settle, not
        // a correctness assumption: a late waiter only measures lower).
        tokio::time::sleep(Duration::from_millis(20)).await;
        let released = Instant::now();
        held.release().await?;
        let (granted, g) = waiting
            .await
            .map_err(|e| LockError::Config(format!("hand-off waiter crashed: {e}")))?;
        let g = g?;
        let d = granted.saturating_duration_since(released);
        total += d;
        record(&mut h, d);
        g.release().await?;
        bar.inc(1);
    }
    Ok(Some(summary(&h, total)))
}

/// Runs `clients` loops of `op(client, iteration)` until `duration` has passed;
/// `op` returns whether it was granted the lock.
async fn for_duration<F, Fut>(
    clients: u64,
    duration: Duration,
    bar: &ProgressBar,
    op: F,
) -> Result<(u64, u64, f64), LockError>
where
    F: Fn(u64, u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<bool, LockError>> + Send,
{
    let op = Arc::new(op);
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for client in 0..clients {
        let op = op.clone();
        let bar = (client == 0).then(|| bar.clone());
        tasks.spawn(async move {
            let (mut grants, mut attempts) = (0u64, 0u64);
            while started.elapsed() < duration {
                if op(client, attempts).await? {
                    grants += 1;
                }
                attempts += 1;
                if let Some(bar) = &bar {
                    bar.set_position(started.elapsed().as_millis() as u64);
                }
            }
            Ok::<_, LockError>((grants, attempts))
        });
    }
    let (mut grants, mut attempts) = (0, 0);
    while let Some(done) = tasks.join_next().await {
        let (g, a) =
            done.map_err(|e| LockError::Config(format!("a benchmark client crashed: {e}")))??;
        grants += g;
        attempts += a;
    }
    Ok((grants, attempts, started.elapsed().as_secs_f64()))
}

fn throughput(clients: u64, keys: u64, (grants, attempts, seconds): (u64, u64, f64)) -> Throughput {
    Throughput {
        clients,
        keys,
        seconds,
        grants,
        attempts,
        grants_per_second: grants as f64 / seconds.max(1e-9),
    }
}

/// `clients` lockers, each on its own connection, lock and release keys picked
/// from `keys` for `duration`: one key is the contended case, many keys the
/// spread-out one.
pub(crate) async fn lockkit_throughput(
    url: &str,
    clients: u64,
    keys: &[String],
    duration: Duration,
    bar: &ProgressBar,
) -> Result<Throughput, LockError> {
    let mut lockers: Vec<Locker> = Vec::new();
    for _ in 0..clients {
        lockers.push(lockkit::connect(url).await?);
    }
    let lockers = Arc::new(lockers);
    let keys = Arc::new(keys.to_vec());
    let n = keys.len() as u64;
    let counts = for_duration(clients, duration, bar, move |client, i| {
        let lockers = lockers.clone();
        let keys = keys.clone();
        async move {
            let key = &keys[((i * clients + client) % n) as usize];
            let g = lockers[client as usize]
                .lock(key.as_str())
                .wait(Duration::from_secs(30))
                .await?;
            g.release().await?;
            Ok(true)
        }
    })
    .await?;
    Ok(throughput(clients, n, counts))
}

/// The floor's counterpart of [`lockkit_throughput`]: each client spins on the raw
/// commands (no waiting, a refused attempt is retried at once).
pub(crate) async fn floor_throughput(
    url: &str,
    clients: u64,
    keys: &[String],
    duration: Duration,
    bar: &ProgressBar,
) -> Result<Option<Throughput>, LockError> {
    let mut floors = Vec::new();
    for _ in 0..clients {
        let Some((floor, _)) = Floor::connect(url).await? else {
            return Ok(None);
        };
        floors.push(floor);
    }
    let Some(first) = floors.first() else {
        return Ok(None);
    };
    first.prepare(keys).await?;
    let floors = Arc::new(floors);
    let keys = Arc::new(keys.to_vec());
    let n = keys.len() as u64;
    let (f, k) = (floors.clone(), keys.clone());
    let counts = for_duration(clients, duration, bar, move |client, i| {
        let floors = f.clone();
        let keys = k.clone();
        async move {
            let key = &keys[((i * clients + client) % n) as usize];
            let floor = &floors[client as usize];
            let owner = format!("{client:016x}{i:016x}");
            match floor.try_acquire(key, &owner).await? {
                Some(held) => {
                    floor.release(key, held).await?;
                    Ok(true)
                }
                None => Ok(false),
            }
        }
    })
    .await?;
    floors[0].clean_up(&keys).await;
    Ok(Some(throughput(clients, n, counts)))
}
