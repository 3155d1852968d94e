//! A worker pool limited by a semaphore: at most 3 exports run at once across
//! every process, however many workers there are.
//!
//! Three "processes" (each its own connection) run 4 workers each; every worker
//! takes a permit of `exports` (limit 3) before it works, and counts how many
//! workers are inside at once. Each permit carries its own fencing token.
//!
//! On embedded SQLite (no server), or on the backend `LOCKKIT_URL` names:
//!
//! ```text
//! cargo run --example worker_pool
//! ```

#![allow(clippy::print_stdout)] // An example prints what it does.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::task::JoinSet;

const PROCESSES: usize = 3;
const WORKERS_EACH: usize = 4;
const LIMIT: u32 = 3;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scratch = tempfile::tempdir()?;
    let url = std::env::var("LOCKKIT_URL")
        .unwrap_or_else(|_| format!("sqlite://{}", scratch.path().join("locks.db").display()));
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let mut workers = JoinSet::new();
    for process in 0..PROCESSES {
        let exports = lockkit::connect(&url).await?.semaphore("exports", LIMIT);
        for worker in 0..WORKERS_EACH {
            let (exports, inside, most) = (exports.clone(), inside.clone(), most.clone());
            workers.spawn(async move {
                let permit = exports.acquire().wait(Duration::from_secs(30)).await?;
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                println!(
                    "  process {process} worker {worker}: exporting with permit token {} ({now} inside)",
                    permit.token()
                );
                tokio::time::sleep(Duration::from_millis(50)).await; // the export
                inside.fetch_sub(1, Ordering::SeqCst);
                permit.release().await
            });
        }
    }
    while let Some(done) = workers.join_next().await {
        done??;
    }
    let most = most.load(Ordering::SeqCst);
    println!(
        "{} workers in {PROCESSES} processes, limit {LIMIT}: at most {most} exported at once",
        PROCESSES * WORKERS_EACH
    );
    if most > LIMIT as usize {
        return Err(
            format!("{most} workers held a permit at once, over the limit of {LIMIT}").into(),
        );
    }
    Ok(())
}
