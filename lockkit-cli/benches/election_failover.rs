//! Election failover: how long after a leader is killed (SIGKILL) a waiting
//! candidate's `campaign` returns, for a 3 s lease, on every backend, each on a
//! throwaway server the testkit starts on 127.0.0.1.
//!
//! Each round, a `lockkit __hold` child process leads (holds the election's lock
//! with the watchdog, 3 s lease), a candidate in this process campaigns, the
//! child is killed, and the time from the kill to the campaign's return is
//! recorded. Prints p50 and max over the rounds, per backend.
//!
//! `cargo bench -p lockkit-cli --bench election_failover -- [ROUNDS] [BACKEND…]`
//! (default 20 rounds, every backend).

#![allow(clippy::print_stdout)] // A benchmark prints its figures.

use std::time::Duration;

use lockkit_conformance::holder::HolderProcess;
use lockkit_testkit::{ConsulStandIn, Etcd, MariaDb, Postgres, Redis, StandInOptions, ZooKeeper};
use tokio::time::Instant;

/// The leader's lease (ZooKeeper: session timeout; Consul: session TTL).
const LEASE: Duration = Duration::from_secs(3);

/// One backend's failovers.
struct Figures {
    name: &'static str,
    lease: Duration,
    took: Vec<Duration>,
}

async fn failovers(name: &'static str, url: String, rounds: usize) -> Result<Figures, String> {
    let locker = lockkit::connect(&url).await.map_err(|e| e.to_string())?;
    let election = locker.election("failover").ttl(LEASE);
    let mut took = Vec::with_capacity(rounds);
    let mut lease = LEASE;
    for _ in 0..rounds {
        let mut hold = std::process::Command::new(env!("CARGO_BIN_EXE_lockkit"));
        hold.arg("__hold").stderr(std::process::Stdio::null());
        let (leader, _) = HolderProcess::start(hold, &url, "failover", LEASE).await?;
        lease = leader.effective_ttl().max(LEASE);
        let candidate = election.clone();
        let campaign = tokio::spawn(async move { candidate.campaign("next").await });
        // The candidate's first attempt finds the lock held, and it waits.
        tokio::time::sleep(Duration::from_millis(300)).await;
        if campaign.is_finished() {
            return Err(format!("{name}: the candidate led while the leader lived"));
        }
        let killed = Instant::now();
        leader.kill().await;
        let lead = campaign
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        took.push(killed.elapsed());
        lead.resign().await.map_err(|e| e.to_string())?;
    }
    Ok(Figures { name, lease, took })
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn report(f: &Figures) {
    let mut took = f.took.clone();
    took.sort();
    let p50 = took[took.len() / 2];
    let max = took[took.len() - 1];
    println!(
        "| {} | {} | {} | {} | {} |",
        f.name,
        ms(f.lease),
        took.len(),
        ms(p50),
        ms(max)
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let rounds: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(20);
    let only: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    let want = |name: &str| only.is_empty() || only.contains(&name);
    let e = |e: lockkit_testkit::TestkitError| e.to_string();

    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let redis = Redis::start().await.map_err(e)?;
    let etcd = Etcd::start().await.map_err(e)?;
    let zk = ZooKeeper::start().await.map_err(e)?;
    let pg = Postgres::start().await.map_err(e)?;
    let maria = MariaDb::start().await.map_err(e)?;
    // Consul refuses session TTLs under 10 s; the stand-in is told to allow 3 s.
    let consul = ConsulStandIn::start_with(
        StandInOptions::default().with_min_session_ttl(Duration::from_millis(100)),
    )
    .await
    .map_err(e)?;
    let lease_ms = LEASE.as_millis();
    let backends: Vec<(&'static str, String)> = vec![
        (
            "sqlite",
            format!("sqlite://{}", dir.path().join("l.db").display()),
        ),
        ("redis", redis.url()),
        ("etcd", etcd.url()),
        (
            "zookeeper",
            format!("{}?session_timeout_ms={lease_ms}", zk.url()),
        ),
        ("postgres", pg.url()),
        ("postgres advisory", format!("{}?mode=advisory", pg.url())),
        ("mariadb", maria.url()),
        ("mariadb get_lock", format!("{}?mode=get_lock", maria.url())),
        (
            "consul (stand-in)",
            format!("{}?session_ttl_ms={lease_ms}&lock_delay_ms=0", consul.url()),
        ),
    ];
    println!("| backend | lease | failovers | p50 | max |\n|---|---|---|---|---|");
    for (name, url) in backends.into_iter().filter(|(n, _)| want(n)) {
        match failovers(name, url, rounds).await {
            Ok(f) => report(&f),
            Err(e) => println!("| {name} | failed: {e} | | | |"),
        }
    }
    Ok(())
}
