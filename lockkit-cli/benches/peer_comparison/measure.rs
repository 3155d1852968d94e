//! Measures one backend group: the floor and lockkit from `lockkit bench`, then every
//! program's uncontended runs and hand-off rounds.

use crate::Args;
use crate::backend::Failure;
use crate::in_round_trips::in_round_trips;
use crate::paired::{self, Noise};
use crate::program::Program;
use crate::results::{Floor, Group, Measured, Row, Stats};
use crate::rounds;

/// Hand-off rounds per queue length at least: the hand-offs' ratio to the round
/// trip is bootstrapped over rounds ([`crate::in_round_trips`]), which four
/// rounds of 64 leave too wide to judge by.
pub(crate) const MIN_ROUNDS: u64 = 8;
/// What the control row is called: lockkit measured a second time.
pub(crate) const CONTROL: &str = "lockkit, again (control)";
/// lockkit with a fixed lease and no watchdog: the watchdog's cost on the hot
/// path is lockkit's uncontended ratio to it (no hand-offs: the watchdog is not
/// on their path).
pub(crate) const LEASE: &str = "lockkit, fixed lease (no watchdog)";
/// How the name of a server's own hand-off floor ends: its row is context for
/// the round-trip target, not a peer.
pub(crate) const HANDOFF_FLOOR: &str = "(hand-off floor)";
/// MariaDB's hand-off floor (see [`crate::raw_bell`]).
pub(crate) const MYSQL_HANDOFF_FLOOR: &str = "raw GET_LOCK wake + one write (hand-off floor)";
/// PostgreSQL's hand-off floor (see [`crate::raw_bell`]).
pub(crate) const PG_HANDOFF_FLOOR: &str = "raw pg_advisory_lock wake + one write (hand-off floor)";

/// `lockkit bench URL --json` for lockkit's uncontended figures and the floor's,
/// measured alternating in one process.
pub(crate) async fn lockkit_bench(
    url: &str,
    iterations: u64,
    extra: &[&str],
) -> Result<serde_json::Value, Failure> {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_lockkit"))
        .args(["bench", url, "--iterations", &iterations.to_string()])
        .args(["--duration", "0", "--json"])
        .args(extra)
        .stderr(std::process::Stdio::inherit())
        .output()
        .await?;
    if !out.status.success() {
        return Err(format!("lockkit bench exited with {}", out.status).into());
    }
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    Ok(report["backends"][0].clone())
}

/// Stats from `lockkit bench`'s JSON latency object.
fn bench_stats(latency: &serde_json::Value) -> Option<Stats> {
    Some(Stats {
        samples: latency["samples"].as_u64()? as usize,
        p50_us: latency["p50_us"].as_f64()?,
        p99_us: latency["p99_us"].as_f64()?,
        per_second: latency["ops_per_second"].as_f64()?,
    })
}

/// One backend: the floor and lockkit from `lockkit bench`, then every program's
/// uncontended runs (interleaved) and hand-off rounds.
pub(crate) async fn run_group(
    args: &Args,
    mut group: Group,
    lockkit_url: &str,
    programs: Vec<Result<Program, String>>,
) -> Group {
    eprintln!("== {}", group.title);
    let before = round_trip(&mut group).await;
    group.floor = if group.uncontended_only || group.handoffs_only.is_some() || group.without_floor
    {
        None
    } else {
        floor(args, &mut group, lockkit_url).await
    };
    let mut runnable = Vec::new();
    for program in programs {
        match program {
            Ok(p) => runnable.push(p),
            Err(reason) => group.skipped.push(reason),
        }
    }
    let samples = if group.handoffs_only.is_some() {
        runnable
            .iter()
            .map(|_| Err("not measured".to_owned()))
            .collect()
    } else {
        uncontended(args, &mut group, &runnable).await
    };
    for (program, samples) in runnable.iter().zip(samples) {
        let mut row = Row::new(&program.library);
        row.uncontended = samples;
        if program.library == LEASE || group.uncontended_only {
            group.rows.push(row);
            continue;
        }
        eprintln!("   {}: hand-offs", program.library);
        for &waiters in group.waiters(&args.waiters) {
            let rounds = args.handoffs.div_ceil(waiters).max(MIN_ROUNDS);
            let measured = program
                .handoffs(&group.backend, &group.servers, waiters, rounds)
                .await
                .map(|h| Measured {
                    in_round_trips: h
                        .round_trips_ns
                        .as_deref()
                        .and_then(|rtt| in_round_trips(&h.gaps_ns, &h.per_round, rtt)),
                    from_release_start_in_round_trips: h
                        .round_trips_ns
                        .as_deref()
                        .zip(h.from_release_start_ns.as_deref())
                        .and_then(|(rtt, t)| in_round_trips(t, &h.per_round, rtt)),
                    server_cpu_per_handoff: h.server_cpu.map(|c| c / h.gaps_ns.len().max(1) as u32),
                    commands_per_handoff: h
                        .commands
                        .map(|c| c as f64 / h.gaps_ns.len().max(1) as f64),
                    stats: Stats::from_ns(&h.gaps_ns),
                    granted_before_return: h.gaps_ns.iter().filter(|&&g| g == 0).count() as f64
                        / h.gaps_ns.len().max(1) as f64,
                    from_release_start: h.from_release_start_ns.as_deref().map(Stats::from_ns),
                })
                .map_err(|e| e.to_string());
            row.handoffs.push((waiters, measured));
        }
        // A peer that cannot finish (say, a Redlock that livelocks under contention)
        // is a result, shown in its table; lockkit failing fails the run.
        if row.library == "lockkit" {
            let handoffs_only = group.handoffs_only.is_some();
            let measured = |f: &String| !handoffs_only || f != "not measured";
            for failure in row.failures().into_iter().filter(measured) {
                group.failures.push(format!("lockkit: {failure}"));
            }
        }
        group.rows.push(row);
    }
    // A server just started may still be warming up (ZooKeeper's JIT): the lower of
    // the round trips measured first and last.
    let after = round_trip(&mut group).await;
    group.round_trip = before.into_iter().chain(after).min();
    group
}

/// Every program's uncontended pairs in rotating rounds, with lockkit's control.
async fn uncontended(
    args: &Args,
    group: &mut Group,
    runnable: &[Program],
) -> Vec<Result<crate::rounds::Uncontended, String>> {
    // The control: lockkit again, in a process of its own, taking its turns like
    // any library; its ratio to lockkit is the run's noise.
    let control = runnable
        .iter()
        .find(|p| p.library == "lockkit")
        .map(|p| Program {
            library: CONTROL.to_owned(),
            ..p.clone()
        });
    let mut measured = runnable.to_vec();
    measured.extend(control);
    let mut uncontended = rounds::run(&measured, args.iterations, &group.servers).await;
    group.control = uncontended
        .pop()
        .filter(|_| measured.len() > runnable.len());
    if let (Some(Ok(control)), Some(Ok(lockkit))) = (&group.control, uncontended.first()) {
        group.noise = paired::paired(&lockkit.rounds, &control.rounds).map(Noise::from_control);
    }
    uncontended
}

/// The floor and lockkit's uncontended figures from `lockkit bench`, alternating.
async fn floor(args: &Args, group: &mut Group, lockkit_url: &str) -> Option<Floor> {
    match lockkit_bench(lockkit_url, args.iterations, &["--handoffs", "0"]).await {
        Ok(report) => match (
            bench_stats(&report["floor"]),
            bench_stats(&report["lockkit"]),
        ) {
            (Some(stats), Some(lockkit)) => Some(Floor {
                stats,
                lockkit,
                description: report["floor_description"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            }),
            _ => None,
        },
        Err(e) => {
            group.failures.push(format!("lockkit bench: {e}"));
            None
        }
    }
}

/// The backend's round trip now, or `None` (noted as a failure).
async fn round_trip(group: &mut Group) -> Option<std::time::Duration> {
    match group.backend.round_trip(1000).await {
        Ok(rtt) => rtt,
        Err(e) => {
            group.failures.push(format!("round trip: {e}"));
            None
        }
    }
}
