//! `lockkit bench URL…`: lockkit against the backend's raw floor, measured in the
//! same run on the same backend.
//!
//! For each backend it measures:
//! - uncontended lock+release latency (p50, p90, p99, max; HdrHistogram), rounds of
//!   lockkit and of the floor alternating so drift in machine load hits both alike;
//! - contended hand-off latency: release by one client → grant to a waiter on
//!   another connection (and optionally down a queue of `--waiters`);
//! - contended throughput: `--clients` clients on one key for `--duration`;
//! - throughput across many keys: the same clients spread over `--keys` keys.
//!
//! Throughput is measured for lockkit and then for the floor ([`floor`]), whose
//! clients spin on the raw commands: the most grants per second those commands
//! can give, with no waiting, fairness or renewal.

mod floor;
mod measure;
mod modes;
mod print;
mod queue;
mod server_stats;

use std::process::ExitCode;
use std::time::Duration;

use lockkit::{LockError, redact_url};
use serde::Serialize;

use crate::duration::{as_millis, parse_duration};
use crate::progress::Bars;
use floor::Floor;
pub(crate) use measure::{Latency, Throughput};
use measure::{histogram, summary, time_one};
use modes::{Mode, ModeReport};
pub(crate) use queue::Queue;

/// What to measure (shared by `bench` and `compare`).
#[derive(Debug, Clone, clap::Args, Serialize)]
pub(crate) struct Settings {
    /// Measured uncontended lock+release pairs, for each of lockkit and the floor.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(10..=10_000_000))]
    pub(crate) iterations: u64,
    /// Contended hand-offs to measure (release by one client → grant to a waiting
    /// one on another connection).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(0..=100_000))]
    pub(crate) handoffs: u64,
    /// Also measure a queue of this many waiters (each on its own connection, each
    /// taking the lock once): hand-off latency, and server commands per hand-off
    /// (Redis, from INFO commandstats).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=1000))]
    pub(crate) waiters: u64,
    /// Clients of the throughput runs, each on its own connection.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=256))]
    pub(crate) clients: u64,
    /// Keys the many-keys throughput run spreads its clients over.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub(crate) keys: u64,
    /// Primitives to measure beside the lock, e.g. `read,semaphore`: uncontended
    /// acquire+release in the same rounds as the lock and the floor, and for a
    /// semaphore a queue of `--waiters` behind `--limit` holders. A primitive the
    /// driver does not have is left out.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub(crate) modes: Vec<Mode>,
    /// Permits of the semaphore `--modes semaphore` measures.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) limit: u32,
    /// How long each throughput run lasts (lockkit's and the floor's), e.g. 3s or
    /// 500ms; 0 skips the throughput runs.
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    #[serde(rename = "duration_ms", serialize_with = "as_millis")]
    pub(crate) duration: Duration,
}

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    urls: crate::url_arg::ManyUrls,
    #[command(flatten)]
    settings: Settings,
    /// Print the results as JSON on stdout instead of tables.
    #[arg(long)]
    json: bool,
}

/// Lockkit and the floor doing the same work with the same clients.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Compared {
    pub(crate) lockkit: Throughput,
    pub(crate) floor: Option<Throughput>,
    pub(crate) ratio_lockkit_over_floor: Option<f64>,
}

/// Everything `bench` measured on one backend.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BenchReport {
    /// The URL, without credentials.
    pub(crate) backend: String,
    pub(crate) driver: String,
    pub(crate) iterations: u64,
    pub(crate) lockkit: Latency,
    pub(crate) floor: Option<Latency>,
    pub(crate) floor_description: &'static str,
    pub(crate) p50_ratio_lockkit_over_floor: Option<f64>,
    pub(crate) handoff: Option<Latency>,
    pub(crate) queue: Option<Queue>,
    /// The primitives of `--modes` the driver supports.
    pub(crate) modes: Vec<ModeReport>,
    /// `clients` clients on one key.
    pub(crate) contended: Option<Compared>,
    /// `clients` clients over `keys` keys.
    pub(crate) many_keys: Option<Compared>,
}

#[derive(Debug, Serialize)]
struct BenchOutput<'a> {
    /// Whether this lockkit was built without optimisations (figures are slower).
    debug_build: bool,
    settings: &'a Settings,
    backends: Vec<BenchReport>,
}

fn ratio(lockkit: f64, floor: f64) -> f64 {
    lockkit / floor.max(1e-9)
}

/// What the uncontended rounds measured: the driver's name, the lock's latency,
/// each supported mode's, and the floor's with its description.
struct Uncontended {
    driver: &'static str,
    lock: Latency,
    modes: Vec<(Mode, Latency)>,
    floor: Option<(Latency, &'static str)>,
}

/// Uncontended acquire+release: the lock, each of `settings.modes` the driver
/// supports, and the floor, alternating round by round.
async fn uncontended(url: &str, settings: &Settings, bars: Bars) -> Result<Uncontended, LockError> {
    let locker = lockkit::connect(url).await?;
    let floor = Floor::connect(url).await?;
    let caps = locker.driver().capabilities();
    let modes: Vec<Mode> = settings
        .modes
        .iter()
        .copied()
        .filter(|m| m.supported(&caps))
        .collect();
    let limit = settings.limit;
    let key = crate::scratch::key("lockkit");
    let key = key.as_str();
    let floor_key = crate::scratch::key("floor");
    let floor_key = floor_key.as_str();
    if let Some((f, _)) = &floor {
        f.prepare(&[floor_key.to_owned()]).await?;
    }
    let (mut lk, mut fl) = (histogram()?, histogram()?);
    let (mut lk_total, mut fl_total) = (Duration::ZERO, Duration::ZERO);
    let mut per_mode = Vec::new();
    for _ in &modes {
        per_mode.push((histogram()?, Duration::ZERO));
    }
    let lock_release = || async {
        let g = locker.try_lock(key).await?;
        g.release().await
    };
    let mode_keys: Vec<String> = modes.iter().map(|m| m.key("lockkit")).collect();
    let take_release = |i: usize| {
        let (locker, key) = (&locker, &mode_keys[i]);
        let mode = modes[i];
        async move { mode.try_take(locker, key, limit).await?.release().await }
    };
    let owner = |i: u64| format!("{i:032x}");
    // Warm-up: connections, prepared statements, scripts.
    for i in 0..100 {
        lock_release().await?;
        for m in 0..modes.len() {
            take_release(m).await?;
        }
        if let Some((f, _)) = &floor {
            f.lock_release(floor_key, &owner(i)).await?;
        }
    }
    let bar = bars.bar(settings.iterations, "uncontended acquire+release");
    for i in 0..settings.iterations {
        lk_total += time_one(&mut lk, lock_release).await?;
        for (m, (h, total)) in per_mode.iter_mut().enumerate() {
            *total += time_one(h, || take_release(m)).await?;
        }
        if let Some((f, _)) = &floor {
            let owner = owner(i);
            fl_total += time_one(&mut fl, || f.lock_release(floor_key, &owner)).await?;
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    if let Some((f, _)) = &floor {
        f.clean_up(&[floor_key.to_owned()]).await;
    }
    Ok(Uncontended {
        driver: locker.driver().name(),
        lock: summary(&lk, lk_total),
        modes: modes
            .into_iter()
            .zip(per_mode)
            .map(|(m, (h, total))| (m, summary(&h, total)))
            .collect(),
        floor: floor.map(|(_, description)| (summary(&fl, fl_total), description)),
    })
}

/// Lockkit's and the floor's throughput with `settings.clients` clients over `keys`.
async fn compared(
    url: &str,
    settings: &Settings,
    keys: &[String],
    label: &str,
    bars: Bars,
) -> Result<Compared, LockError> {
    let ms = settings.duration.as_millis() as u64;
    let bar = bars.bar(ms, format!("{label}, lockkit"));
    let lockkit =
        measure::lockkit_throughput(url, settings.clients, keys, settings.duration, &bar).await?;
    bar.finish_and_clear();
    let bar = bars.bar(ms, format!("{label}, floor"));
    let floor =
        measure::floor_throughput(url, settings.clients, keys, settings.duration, &bar).await?;
    bar.finish_and_clear();
    let ratio_lockkit_over_floor = floor
        .as_ref()
        .map(|f| ratio(lockkit.grants_per_second, f.grants_per_second));
    Ok(Compared {
        lockkit,
        floor,
        ratio_lockkit_over_floor,
    })
}

/// The keys of the many-keys throughput.
fn many_keys(n: u64) -> Vec<String> {
    (0..n)
        .map(|i| crate::scratch::key(&format!("keys/{i}")))
        .collect()
}

/// Every lockkit key a measurement of `settings` uses.
fn keys_used(settings: &Settings) -> Vec<String> {
    let mut keys: Vec<String> = ["lockkit", "handoff", "queue", "contended"]
        .iter()
        .map(|name| crate::scratch::key(name))
        .collect();
    for mode in &settings.modes {
        keys.push(mode.key("lockkit"));
        keys.push(mode.key("queue"));
    }
    keys.extend(many_keys(settings.keys));
    keys
}

/// Every measurement of `settings` on the backend at `url`; then every key it
/// used is purged.
pub(crate) async fn measure(
    url: &str,
    settings: &Settings,
    bars: Bars,
) -> Result<BenchReport, LockError> {
    let report = measure_all(url, settings, bars).await;
    crate::scratch::purge(url, keys_used(settings)).await;
    report
}

async fn measure_all(url: &str, settings: &Settings, bars: Bars) -> Result<BenchReport, LockError> {
    let Uncontended {
        driver,
        lock: lockkit,
        modes,
        floor,
    } = uncontended(url, settings, bars).await?;
    let bar = bars.bar(settings.handoffs, "hand-off");
    let handoff = measure::handoffs(url, settings.handoffs, &bar).await?;
    bar.finish_and_clear();
    let queue = queue::queue(url, settings.waiters, None).await?;
    let mut mode_reports = Vec::new();
    for (mode, latency) in modes {
        let limit = (mode == Mode::Semaphore).then_some(settings.limit);
        let queue = match limit {
            Some(limit) => queue::queue(url, settings.waiters, Some(limit)).await?,
            None => None,
        };
        mode_reports.push(ModeReport {
            mode,
            limit,
            p50_ratio_lockkit_over_floor: floor
                .as_ref()
                .map(|(f, _)| ratio(latency.p50_us as f64, f.p50_us as f64)),
            lockkit: latency,
            queue,
        });
    }
    let (contended, many_keys) = if settings.duration.is_zero() {
        (None, None)
    } else {
        let one = [crate::scratch::key("contended")];
        let many = many_keys(settings.keys);
        (
            Some(compared(url, settings, &one, "one key", bars).await?),
            Some(compared(url, settings, &many, "many keys", bars).await?),
        )
    };
    Ok(BenchReport {
        backend: redact_url(url),
        driver: driver.to_owned(),
        iterations: settings.iterations,
        p50_ratio_lockkit_over_floor: floor
            .as_ref()
            .map(|(f, _)| ratio(lockkit.p50_us as f64, f.p50_us as f64)),
        lockkit,
        floor_description: floor
            .as_ref()
            .map_or("no floor for this backend yet", |(_, d)| d),
        floor: floor.map(|(f, _)| f),
        handoff,
        queue,
        modes: mode_reports,
        contended,
        many_keys,
    })
}

pub(crate) async fn run(args: Args) -> Result<ExitCode, LockError> {
    let urls = args.urls.get()?;
    if cfg!(debug_assertions) {
        eprintln!(
            "note: this lockkit is a debug build; its figures are several times slower than \
             a release build's (cargo run --release -p lockkit-cli, or cargo install --path \
             lockkit-cli)"
        );
    }
    let bars = Bars::new(args.json);
    let mut backends = Vec::new();
    for url in &urls {
        let report = match measure(url, &args.settings, bars).await {
            Ok(report) => report,
            Err(e) => {
                crate::print_error(&format!("benchmarking {}", redact_url(url)), &e);
                return Ok(ExitCode::from(2));
            }
        };
        if !args.json {
            print::report(&report, &args.settings);
        }
        backends.push(report);
    }
    if args.json {
        let output = BenchOutput {
            debug_build: cfg!(debug_assertions),
            settings: &args.settings,
            backends,
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&output).unwrap_or_default()
        );
    }
    Ok(ExitCode::SUCCESS)
}
