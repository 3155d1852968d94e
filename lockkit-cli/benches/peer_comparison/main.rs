//! `ci/bench-peers`: lockkit, the raw floor and the peer libraries on the same
//! throwaway servers, in one run; writes BENCHMARKS.md.
//!
//! Run through `ci/bench-peers`, which installs the peers into a throwaway environment
//! and calls `cargo bench -p lockkit-cli --bench peer_comparison -- …` (release
//! build). Every library runs as a child process speaking the peer protocol of
//! bench/peers/README.md; the runner reads the backend's request counter around each
//! hand-off round, so every library is counted the same way.
#![allow(clippy::print_stdout, clippy::print_stderr)] // A benchmark prints its progress.

mod backend;
mod in_round_trips;
mod machine;
mod measure;
mod paired;
mod participant;
mod plot;
mod program;
mod programs;
mod raw_bell;
mod report;
mod results;
mod rounds;
mod scale;
mod scale_report;
mod server_cpu;
mod servers;
mod suite;
mod targets;
mod transaction_locks;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use backend::Failure;

/// Lockkit, the raw floor and the peers on the same servers; writes BENCHMARKS.md.
#[derive(Debug, Parser)]
struct Args {
    /// Timed uncontended acquire+release pairs per library.
    #[arg(long, default_value_t = 2000)]
    iterations: u64,
    /// Hand-offs measured per library and waiter count (rounds of one holder and N
    /// waiters, as many as it takes, and at least `measure::MIN_ROUNDS`).
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
    #[arg(long, default_value = "ci/bench-peers")]
    command: String,
    /// Groups to run: redis, redlock, etcd, zk, mariadb, postgres, consul, scale
    /// (default: all).
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
    // A child of the runner: a library's participant, or the held-locks probe.
    let child = match argv.get(1).map(String::as_str) {
        Some("participant") => Some(runtime.block_on(participant::run(&argv[2..]))),
        Some("holds") => Some(runtime.block_on(scale::holds_child(&argv[2..]))),
        _ => None,
    };
    if let Some(done) = child {
        return match done {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{}: {e}", argv[1..].join(" "));
                ExitCode::FAILURE
            }
        };
    }
    let args = Args::parse();
    // The runner, and every client it starts, on the clients' CPU; the servers move
    // to theirs as they start (see `machine::SERVER_CPU`).
    machine::pin(std::process::id(), machine::CLIENT_CPU);
    let result = runtime.block_on(async {
        let groups = suite::run(&args).await?;
        let consul = if args.wants("consul") {
            Some(
                suite::consul_smoke()
                    .await
                    .unwrap_or_else(|e| format!("FAILED: {e}")),
            )
        } else {
            None
        };
        let scale = if args.wants("scale") {
            eprintln!("== scale");
            Some(scale::run().await?)
        } else {
            None
        };
        Ok::<_, Failure>((groups, consul, scale))
    });
    let (groups, consul, scale) = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let machine = machine::Machine::describe(&args.command);
    let mut markdown = report::render(&machine, &args, &groups, consul.as_deref());
    if let Some(scale) = &scale {
        markdown.push('\n');
        markdown.push_str(&scale_report::section(scale));
        let dir = args.out.parent().unwrap_or(std::path::Path::new("."));
        for (path, svg) in scale_report::charts(scale) {
            let path = dir.join(path);
            let written = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::write(&path, svg));
            if let Err(e) = written {
                eprintln!("error: cannot write {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
    }
    if let Err(e) = std::fs::write(&args.out, markdown) {
        eprintln!("error: cannot write {}: {e}", args.out.display());
        return ExitCode::FAILURE;
    }
    eprintln!("wrote {}", args.out.display());
    let failures: Vec<&String> = groups
        .iter()
        .flat_map(|g| &g.failures)
        .chain(scale.iter().flat_map(|s| &s.failures))
        .collect();
    if failures.is_empty() && !consul.as_deref().unwrap_or_default().starts_with("FAILED") {
        ExitCode::SUCCESS
    } else {
        for f in failures {
            eprintln!("failed: {f}");
        }
        ExitCode::FAILURE
    }
}
