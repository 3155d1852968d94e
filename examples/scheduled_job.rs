//! A scheduled job that runs on one node of many, with ShedLock's semantics
//! ([`lockkit::Locker::job`]).
//!
//! Three nodes (each with its own connection, as separate services would have)
//! fire the same job at every tick of one schedule. At each tick one node runs it
//! and the others skip; the run keeps the job's lock for `at_least_for` after it
//! began, so a node whose tick comes a little late skips too. The job's fencing
//! token rises from run to run.
//!
//! On embedded SQLite (no server), or on the backend `LOCKKIT_URL` names:
//!
//! ```text
//! cargo run --example scheduled_job
//! LOCKKIT_URL=redis://127.0.0.1:6379 cargo run --example scheduled_job --features redis
//! ```

#![allow(clippy::print_stdout)] // An example prints what it does.

use std::time::Duration;

use lockkit::{JobRun, LockError, Locker};
use tokio::task::JoinSet;

const NODES: usize = 3;
const TICKS: usize = 3;
const AT_LEAST: Duration = Duration::from_millis(400);

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scratch = tempfile::tempdir()?;
    let url = std::env::var("LOCKKIT_URL")
        .unwrap_or_else(|_| format!("sqlite://{}", scratch.path().join("locks.db").display()));
    let mut nodes = Vec::new();
    for _ in 0..NODES {
        nodes.push(lockkit::connect(&url).await?);
    }
    let mut last_token = None;
    for tick in 0..TICKS {
        // Every node fires the job at once; one of them, the 3rd, 50 ms late.
        let mut runs = JoinSet::new();
        for (i, node) in nodes.iter().cloned().enumerate() {
            runs.spawn(async move {
                if i == NODES - 1 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                (i, run_report(&node, tick, i).await)
            });
        }
        let (mut ran, mut skipped) = (Vec::new(), Vec::new());
        while let Some(joined) = runs.join_next().await {
            let (i, run) = joined?;
            match run? {
                JobRun::Ran { token, .. } => ran.push((i, token)),
                JobRun::Skipped => skipped.push(i),
            }
        }
        let [(node, token)] = ran[..] else {
            return Err(format!("tick {tick}: {} nodes ran the job, not 1", ran.len()).into());
        };
        if last_token.is_some_and(|last| token <= last) {
            return Err(format!("tick {tick}: token {token} did not rise").into());
        }
        last_token = Some(token);
        skipped.sort_unstable();
        println!("tick {tick}: node {node} ran the job (token {token}); nodes {skipped:?} skipped");
        // The next tick of the schedule, after the run's at_least_for.
        tokio::time::sleep(AT_LEAST + Duration::from_millis(100)).await;
    }
    Ok(())
}

/// One node's attempt at one tick: the "report" is a line on stdout.
async fn run_report(node: &Locker, tick: usize, i: usize) -> Result<JobRun<()>, LockError> {
    node.job("nightly-report")
        .at_most_for(Duration::from_secs(30))
        .at_least_for(AT_LEAST)
        .run(|token| async move {
            println!("  tick {tick}: node {i} writes the report, fenced by token {token}");
        })
        .await
}
