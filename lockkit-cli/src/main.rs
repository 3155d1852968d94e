//! `lockkit`: the inventory demo, the conformance check, benchmarks against the raw
//! floor, a side-by-side comparison of backends, and commands run under a lock.
#![allow(clippy::print_stdout)] // A command-line tool prints its results.

mod bench;
mod break_lock;
mod check;
mod compare;
mod demo;
mod duration;
mod elect;
mod hold;
mod inspect;
mod list;
mod probe;
mod progress;
mod report_html;
mod run;
mod scratch;
mod url_arg;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use lockkit::LockError;

/// What is logged unless `LOCKKIT_LOG` says otherwise: warnings, but not the
/// watchdog's "lock lost", which every verb reports itself (`run` stops its command
/// and says why; `check` expects losses).
const DEFAULT_LOG: &str = "warn,lockkit_core::client::watchdog=error";

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
    /// Measures latency, hand-off and throughput against the backend's raw floor.
    Bench(bench::Args),
    /// Check, bench and fault probes on several backends side by side: a table,
    /// an HTML report and JSON.
    Compare(compare::Args),
    /// Shows who holds a key: mode, fencing token, lease left, label; and how many
    /// wait.
    Inspect(inspect::Args),
    /// Force-releases a key after showing its holders (asks unless --yes); exits
    /// 1 when nothing was held.
    Break(break_lock::Args),
    /// Lists the locks held now (--prefix P), on the backends that can list them.
    Ls(list::Args),
    /// Runs a command while holding a lock (like flock(1)); the command gets the
    /// fencing token in LOCKKIT_FENCING_TOKEN and is signalled if the lock is lost.
    Run(run::Args),
    /// Runs a command only while leading an election (like etcdctl elect); it
    /// gets the term in LOCKKIT_TERM and is signalled if leadership is lost.
    Elect(elect::Args),
    /// Child-process entry of `check` (takes a lock and waits to be killed).
    #[command(name = "__hold", hide = true)]
    Hold,
    /// First step of `run`'s command: dies with its parent, then becomes the command.
    #[command(name = "__exec", hide = true)]
    Exec(run::exec::Args),
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("LOCKKIT_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG)),
        )
        .with_ansi(progress::log_colour())
        .with_writer(progress::LogWriter::default)
        .init();
    let cli = Cli::parse();
    // A passing demo or check is quiet: what it logs is shown if it fails, or
    // as it comes when LOCKKIT_LOG asks for it.
    let quiet = matches!(cli.command, Command::Demo(_) | Command::Check(_))
        && std::env::var_os("LOCKKIT_LOG").is_none();
    if quiet {
        progress::hold_back_logs();
    }
    if let Command::Exec(args) = cli.command {
        // No runtime: this process only becomes the command.
        return run::exec::run(args);
    }
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
            Command::Compare(args) => compare::run(args).await,
            Command::Inspect(args) => inspect::run(args).await,
            Command::Break(args) => break_lock::run(args).await,
            Command::Ls(args) => list::run(args).await,
            Command::Run(args) => run::run(args).await,
            Command::Elect(args) => elect::run(args).await,
            Command::Hold => hold::run().await,
            Command::Exec(_) => Ok(ExitCode::FAILURE),
        }
    });
    progress::show_held_logs(!matches!(result, Ok(ExitCode::SUCCESS)));
    match result {
        Ok(code) => code,
        Err(e) => {
            print_error("", &e);
            ExitCode::from(2)
        }
    }
}

/// Prints `e` on stderr, after what was being done (`doing`, may be empty), with
/// what to do about it where the message does not say already.
pub(crate) fn print_error(doing: &str, e: &LockError) {
    let doing = if doing.is_empty() {
        String::new()
    } else {
        format!("{doing}: ")
    };
    eprintln!("error: {doing}{e}");
    if let Some(hint) = hint(e) {
        eprintln!("  hint: {hint}");
    }
}

/// What to do about an error whose message is about the backend, not the input.
fn hint(e: &LockError) -> Option<&'static str> {
    match e {
        LockError::Connection { .. } => Some(
            "check that the server is running and that the URL's host, port, credentials \
             and TLS settings are right (LOCKKIT_LOG=debug shows how each connect went)",
        ),
        LockError::Backend { .. } => Some(
            "the server refused or failed a request; its message is above \
             (LOCKKIT_LOG=debug shows the requests)",
        ),
        _ => None,
    }
}
