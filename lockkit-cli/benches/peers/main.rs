//! `ci/benchmarks`: lockkit, the raw floor and the peer libraries on the same
//! throwaway servers, in one run; writes BENCHMARKS.md.
//!
//! Run through `ci/benchmarks`, which installs the peers into a throwaway environment
//! and calls `cargo bench -p lockkit-cli --bench peers -- …` (release build). Every
//! library runs as a child process speaking the peer protocol of
//! bench/peers/README.md; the runner reads the backend's request counter around each
//! hand-off round, so every library is counted the same way.
#![allow(clippy::print_stdout, clippy::print_stderr)] // A benchmark prints its progress.

mod backend;
mod participant;
mod program;
mod report;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use lockkit_testkit::{ConsulStandIn, Etcd, Redis, RedisMasters, ZooKeeper};

use backend::{Backend, Failure, RedisServer};
use program::Program;
use report::{Floor, Group, Measured, Row, Stats};

/// Lockkit, the raw floor and the peers on the same servers; writes BENCHMARKS.md.
#[derive(Debug, Parser)]
struct Args {
    /// Timed uncontended acquire+release pairs per library.
    #[arg(long, default_value_t = 2000)]
    iterations: u64,
    /// Hand-offs measured per library and waiter count (rounds of one holder and N
    /// waiters, as many as it takes).
    #[arg(long, default_value_t = 256)]
    handoffs: u64,
    /// Queue lengths to measure hand-offs with.
    #[arg(long, value_delimiter = ',', default_value = "8,64")]
    waiters: Vec<u64>,
    /// Python with redis, python-redis-lock, pottery and kazoo installed.
    #[arg(long)]
    python: Option<PathBuf>,
    /// Python with etcd3 (and protobuf<=3.20.3) installed.
    #[arg(long)]
    etcd3_python: Option<PathBuf>,
    /// Java classpath holding the compiled CuratorPeer and Curator's jars.
    #[arg(long)]
    curator_classpath: Option<String>,
    /// Where to write the report (default: the workspace's BENCHMARKS.md; `cargo
    /// bench` runs this from the package's directory).
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../BENCHMARKS.md"))]
    out: PathBuf,
    /// The command line to print in the report as the one that produced it.
    #[arg(long, default_value = "ci/benchmarks")]
    command: String,
    /// Backends to run: redis, redlock, etcd, zk, consul (default: all).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

impl Args {
    fn wants(&self, group: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|g| g == group)
    }
}

/// Each library's uncontended pairs are taken in this many turns, interleaved.
const UNCONTENDED_CHUNKS: u64 = 4;

/// Where the peer programs live, from this crate's manifest dir.
fn peers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../bench/peers")
}

/// The participant programs one backend group runs.
struct Programs<'a> {
    args: &'a Args,
}

impl Programs<'_> {
    /// lockkit or rslock, in this binary re-run as a child.
    fn rust(&self, library: &str, label: &str, target: String) -> Result<Program, String> {
        let exe = std::env::current_exe().map_err(|e| format!("no path to myself: {e}"))?;
        Ok(Program {
            library: label.to_owned(),
            argv: vec![
                exe.display().to_string(),
                "participant".into(),
                library.into(),
            ],
            target,
        })
    }

    fn python(
        &self,
        python: Option<&Path>,
        option: &str,
        peer: &str,
        label: &str,
        target: String,
    ) -> Result<Program, String> {
        let python = python
            .ok_or_else(|| format!("not run: no --{option} given (ci/benchmarks installs it)"))?;
        Ok(Program {
            library: label.to_owned(),
            argv: vec![
                python.display().to_string(),
                peers_dir().join("python_peers.py").display().to_string(),
                peer.into(),
            ],
            target,
        })
    }

    fn curator(&self, label: &str, target: String) -> Result<Program, String> {
        let cp = self.args.curator_classpath.as_ref().ok_or_else(|| {
            "not run: no --curator-classpath given (ci/benchmarks builds it)".to_owned()
        })?;
        Ok(Program {
            library: label.to_owned(),
            argv: [
                "java",
                "-Xmx256m",
                "-XX:+UseSerialGC",
                "-cp",
                cp,
                "CuratorPeer",
            ]
            .map(str::to_owned)
            .to_vec(),
            target,
        })
    }
}

/// `lockkit bench URL --json` for lockkit's uncontended figures and the floor's,
/// measured alternating in one process.
async fn lockkit_bench(
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
async fn run_group(
    args: &Args,
    mut group: Group,
    lockkit_url: &str,
    programs: Vec<Result<Program, String>>,
) -> Group {
    eprintln!("== {}", group.title);
    let before = round_trip(&mut group).await;
    group.floor = match lockkit_bench(lockkit_url, args.iterations, &["--handoffs", "0"]).await {
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
    };
    let mut runnable = Vec::new();
    for program in programs {
        match program {
            Ok(p) => runnable.push(p),
            Err(reason) => group.skipped.push(reason),
        }
    }
    // Uncontended: every library in turn, UNCONTENDED_CHUNKS times over, so drift in
    // the machine's load hits them all alike.
    let mut samples: Vec<Result<Vec<u64>, String>> = vec![Ok(Vec::new()); runnable.len()];
    for _ in 0..UNCONTENDED_CHUNKS {
        for (program, samples) in runnable.iter().zip(&mut samples) {
            if let Ok(so_far) = samples {
                eprintln!("   {}: uncontended", program.library);
                match program
                    .uncontended(args.iterations.div_ceil(UNCONTENDED_CHUNKS))
                    .await
                {
                    Ok(ns) => so_far.extend(ns),
                    Err(e) => *samples = Err(e.to_string()),
                }
            }
        }
    }
    for (program, samples) in runnable.iter().zip(samples) {
        eprintln!("   {}: hand-offs", program.library);
        let mut row = Row::new(&program.library);
        row.uncontended = samples.map(|ns| Stats::from_ns(&ns));
        for &waiters in &args.waiters {
            let rounds = args.handoffs.div_ceil(waiters).max(1);
            let measured = program
                .handoffs(&group.backend, waiters, rounds)
                .await
                .map(|h| Measured {
                    commands_per_handoff: h
                        .commands
                        .map(|c| c as f64 / h.gaps_ns.len().max(1) as f64),
                    stats: Stats::from_ns(&h.gaps_ns),
                })
                .map_err(|e| e.to_string());
            row.handoffs.push((waiters, measured));
        }
        // A peer that cannot finish (say, a Redlock that livelocks under contention)
        // is a result, shown in its table; lockkit failing fails the run.
        if row.library == "lockkit" {
            for failure in row.failures() {
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

/// Everything, on servers started here and stopped on return.
async fn run(args: &Args) -> Result<Vec<Group>, Failure> {
    let programs = Programs { args };
    let mut groups = Vec::new();
    if args.wants("redis") {
        let redis = Redis::start().await?;
        let address = format!("127.0.0.1:{}", redis.port());
        let py = |peer, label| {
            programs.python(
                args.python.as_deref(),
                "python",
                peer,
                label,
                address.clone(),
            )
        };
        let group = Group::new(
            "Redis, one server",
            Backend::Redis(vec![RedisServer::new(address.clone())]),
            version("redis-server", &["--version"]).await,
        );
        groups.push(
            run_group(
                args,
                group,
                &redis.url(),
                vec![
                    programs.rust("lockkit", "lockkit", redis.url()),
                    programs.rust("rslock", "rslock (Rust)", address.clone()),
                    py("redis-py", "redis-py Lock"),
                    py("python-redis-lock", "python-redis-lock"),
                    py("pottery", "pottery Redlock"),
                ],
            )
            .await,
        );
    }
    if args.wants("redlock") {
        let masters = RedisMasters::start(5).await?;
        let addresses: Vec<String> = masters
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        let target = addresses.join(",");
        let group = Group::new(
            "Redlock, five Redis masters",
            Backend::Redis(addresses.into_iter().map(RedisServer::new).collect()),
            version("redis-server", &["--version"]).await,
        );
        groups.push(
            run_group(
                args,
                group,
                &masters.url(),
                vec![
                    programs.rust("lockkit", "lockkit", masters.url()),
                    programs.rust("rslock", "rslock (Rust)", target.clone()),
                    programs.python(
                        args.python.as_deref(),
                        "python",
                        "pottery",
                        "pottery Redlock",
                        target,
                    ),
                ],
            )
            .await,
        );
    }
    if args.wants("etcd") {
        let etcd = Etcd::start().await?;
        let address = format!("127.0.0.1:{}", etcd.port());
        let group = Group::new(
            "etcd, one member",
            Backend::Etcd(address.clone()),
            version("etcd", &["--version"]).await,
        );
        groups.push(
            run_group(
                args,
                group,
                &etcd.url(),
                vec![
                    programs.rust("lockkit", "lockkit", etcd.url()),
                    programs.python(
                        args.etcd3_python.as_deref(),
                        "etcd3-python",
                        "etcd3",
                        "python-etcd3 Lock",
                        address,
                    ),
                ],
            )
            .await,
        );
    }
    if args.wants("zk") {
        let zk = ZooKeeper::start().await?;
        let address = zk.address();
        let backend = Backend::ZooKeeper(address.clone());
        let server = zk_version(&backend).await;
        let group = Group::new("ZooKeeper, standalone", backend, server);
        groups.push(
            run_group(
                args,
                group,
                &zk.url(),
                vec![
                    programs.rust("lockkit", "lockkit", zk.url()),
                    programs.python(
                        args.python.as_deref(),
                        "python",
                        "kazoo",
                        "kazoo Lock",
                        address.clone(),
                    ),
                    programs.curator("Curator InterProcessMutex", address),
                ],
            )
            .await,
        );
    }
    Ok(groups)
}

/// The Consul smoke test: lockkit against the in-process stand-in, not a figure.
async fn consul_smoke() -> Result<String, Failure> {
    let consul = ConsulStandIn::start().await?;
    let report = lockkit_bench(&consul.url(), 200, &["--handoffs", "20", "--waiters", "8"]).await?;
    let queue = &report["queue"]["handoff"];
    Ok(format!(
        "ran: {} uncontended pairs and a queue of 8 waiters ({} hand-offs) completed",
        report["lockkit"]["samples"], queue["samples"]
    ))
}

/// The first line `program ARGS` prints, or why not.
async fn version(program: &str, args: &[&str]) -> String {
    match tokio::process::Command::new(program)
        .args(args)
        .output()
        .await
    {
        Ok(out) => String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned(),
        Err(e) => format!("{program}: {e}"),
    }
}

async fn zk_version(backend: &Backend) -> String {
    let Backend::ZooKeeper(address) = backend else {
        return String::new();
    };
    backend::four_letter_word(address, "srvr")
        .await
        .ok()
        .and_then(|s| s.lines().next().map(str::to_owned))
        .unwrap_or_else(|| format!("ZooKeeper at {address}"))
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    if argv.get(1).map(String::as_str) == Some("participant") {
        return match runtime.block_on(participant::run(&argv[2..])) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("participant {}: {e}", argv[2..].join(" "));
                ExitCode::FAILURE
            }
        };
    }
    let args = Args::parse();
    let result = runtime.block_on(async {
        let groups = run(&args).await?;
        let consul = if args.wants("consul") {
            Some(
                consul_smoke()
                    .await
                    .unwrap_or_else(|e| format!("FAILED: {e}")),
            )
        } else {
            None
        };
        Ok::<_, Failure>((groups, consul))
    });
    let (groups, consul) = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let machine = report::Machine::describe(&args.command);
    let markdown = report::render(&machine, &args, &groups, consul.as_deref());
    if let Err(e) = std::fs::write(&args.out, markdown) {
        eprintln!("error: cannot write {}: {e}", args.out.display());
        return ExitCode::FAILURE;
    }
    eprintln!("wrote {}", args.out.display());
    let failures: Vec<&String> = groups.iter().flat_map(|g| &g.failures).collect();
    if failures.is_empty() && !consul.as_deref().unwrap_or_default().starts_with("FAILED") {
        ExitCode::SUCCESS
    } else {
        for f in failures {
            eprintln!("failed: {f}");
        }
        ExitCode::FAILURE
    }
}
