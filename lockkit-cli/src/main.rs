//! `lockkit`: the inventory demo, the conformance check and benchmarks, from a shell.
#![allow(clippy::print_stdout)] // A command-line tool prints its results.

mod bench;
mod check;
mod demo;
mod hold;
mod run;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Distributed locks with one contract: try backends from the shell.
#[derive(Debug, Parser)]
#[command(name = "lockkit", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Inventory deduction with and without lockkit: shows overselling, then none.
    Demo(demo::Args),
    /// Runs the conformance suite against a live backend.
    Check(check::Args),
    /// Measures uncontended lock+release latency against the backend's raw floor.
    Bench(bench::Args),
    /// Runs a command while holding a lock (like flock(1)); the command gets the
    /// fencing token in LOCKKIT_FENCING_TOKEN and is signalled if the lock is lost.
    Run(run::Args),
    /// Child-process entry of `check` (takes a lock and waits to be killed).
    #[command(name = "__hold", hide = true)]
    Hold,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("LOCKKIT_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Demo(args) => demo::run(args).await,
            Command::Check(args) => check::run(args).await,
            Command::Bench(args) => bench::run(args).await,
            Command::Run(args) => run::run(args).await,
            Command::Hold => hold::run().await,
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
