//! The scale rows, on one Redis server: lock+release throughput with 1 to 256
//! clients, on one key and on a key each (`lockkit bench`), and what held locks
//! cost one `Locker`: memory, and the renewal traffic of its watchdog (the
//! `holds` child, this binary re-run).

use std::time::{Duration, Instant};

use lockkit_testkit::Redis;
use serde::{Deserialize, Serialize};

use crate::backend::{Backend, Failure, RedisServer};

/// Client counts of the throughput rows.
pub(crate) const CLIENTS: [u64; 4] = [1, 8, 64, 256];
/// Held locks per `Locker` of the memory and renewal rows.
pub(crate) const HELD: [u64; 3] = [1_000, 10_000, 20_000];
/// Each throughput run (lockkit's, then the floor's).
const RUN: &str = "2s";
/// The held locks' lease: the watchdog renews each every `TTL / 3`.
pub(crate) const TTL: Duration = Duration::from_secs(3);
/// How long the renewals are counted.
const WINDOW: Duration = Duration::from_secs(6);

/// Grants per second with `clients` clients.
#[derive(Debug, Clone)]
pub(crate) struct Throughput {
    pub(crate) clients: u64,
    pub(crate) one_key: f64,
    pub(crate) one_key_floor: Option<f64>,
    pub(crate) distinct_keys: f64,
    pub(crate) distinct_keys_floor: Option<f64>,
}

/// What `held` locks cost one `Locker`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Holds {
    pub(crate) held: u64,
    /// Resident memory grown by acquiring them, KiB.
    pub(crate) rss_kib: u64,
    /// Renewal requests (EVALSHA) per second while they are held.
    pub(crate) requests_per_s: f64,
    /// Redis commands per second, those run inside the scripts included.
    pub(crate) commands_per_s: f64,
    /// Holds still live at the end (all of them, or the row is wrong).
    pub(crate) live: u64,
}

/// Everything the scale rows measured.
#[derive(Debug, Default)]
pub(crate) struct Scale {
    pub(crate) throughput: Vec<Throughput>,
    pub(crate) holds: Vec<Holds>,
    pub(crate) failures: Vec<String>,
}

/// Runs every scale row on a Redis server started here.
pub(crate) async fn run() -> Result<Scale, Failure> {
    let redis = Redis::start().await?;
    if let Some(pid) = redis.pid() {
        crate::machine::pin(pid, crate::machine::SERVER_CPU);
    }
    let mut scale = Scale::default();
    for clients in CLIENTS {
        eprintln!("   scale: {clients} clients");
        match throughput(&redis.url(), clients).await {
            Ok(t) => scale.throughput.push(t),
            Err(e) => scale.failures.push(format!("{clients} clients: {e}")),
        }
    }
    for held in HELD {
        eprintln!("   scale: {held} held locks");
        match holds(&redis.url(), held).await {
            Ok(h) => scale.holds.push(h),
            Err(e) => scale.failures.push(format!("{held} held locks: {e}")),
        }
    }
    Ok(scale)
}

async fn throughput(url: &str, clients: u64) -> Result<Throughput, Failure> {
    let n = clients.to_string();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_lockkit"))
        .args(["bench", url, "--iterations", "10", "--handoffs", "0"])
        .args(["--clients", &n, "--keys", &n, "--duration", RUN, "--json"])
        .stderr(std::process::Stdio::null())
        .output()
        .await?;
    if !out.status.success() {
        return Err(format!("lockkit bench exited with {}", out.status).into());
    }
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let b = &report["backends"][0];
    let rate = |v: &serde_json::Value| v["grants_per_second"].as_f64();
    Ok(Throughput {
        clients,
        one_key: rate(&b["contended"]["lockkit"]).ok_or("no one-key figure")?,
        one_key_floor: rate(&b["contended"]["floor"]),
        distinct_keys: rate(&b["many_keys"]["lockkit"]).ok_or("no many-keys figure")?,
        distinct_keys_floor: rate(&b["many_keys"]["floor"]),
    })
}

/// Runs `holds URL N` in a child of its own (its memory is the `Locker`'s).
async fn holds(url: &str, held: u64) -> Result<Holds, Failure> {
    let out = tokio::process::Command::new(std::env::current_exe()?)
        .args(["holds", url, &held.to_string()])
        .output()
        .await?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        return Err(format!("holds {held} exited with {}: {}", out.status, why.trim()).into());
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// The `holds URL N` child: one `Locker` takes `N` locks with the watchdog on,
/// and counts the server's requests while it keeps them for [`WINDOW`].
pub(crate) async fn holds_child(args: &[String]) -> Result<(), Failure> {
    let [url, held] = args else {
        return Err("usage: holds URL N".into());
    };
    let held: u64 = held.parse()?;
    let address = url.trim_start_matches("redis://").trim_end_matches('/');
    let server = Backend::Redis(vec![RedisServer::new(address.to_owned())]);
    let locker = lockkit::connect(url).await?;
    let before = rss_kib()?;
    let mut guards = Vec::with_capacity(held as usize);
    for i in 0..held {
        guards.push(
            locker
                .lock(format!("scale/{held}/{i}"))
                .ttl(TTL)
                .no_wait()
                .await?,
        );
    }
    let rss = rss_kib()?.saturating_sub(before);
    // Let the first renewals of the acquiring burst pass, then count.
    tokio::time::sleep(TTL / 3).await;
    let (c0, r0) = (server.commands().await?, server.script_calls().await?);
    let started = Instant::now();
    tokio::time::sleep(WINDOW).await;
    let (c1, r1) = (server.commands().await?, server.script_calls().await?);
    let seconds = started.elapsed().as_secs_f64();
    let now = tokio::time::Instant::now();
    let live = guards
        .iter()
        .filter(|g| !g.is_lost() && g.deadline() > now)
        .count() as u64;
    let per_s = |a: Option<u64>, b: Option<u64>| {
        (b.unwrap_or(0).saturating_sub(a.unwrap_or(0))) as f64 / seconds
    };
    let report = Holds {
        held,
        rss_kib: rss,
        requests_per_s: per_s(r0, r1),
        commands_per_s: per_s(c0, c1),
        live,
    };
    for guard in guards {
        guard.release().await?;
    }
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}

/// This process's resident memory, KiB.
fn rss_kib() -> Result<u64, Failure> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| "no VmRSS in /proc/self/status".into())
}
