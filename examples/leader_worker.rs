//! A leader-elected worker: of three candidates, one leads and works; when it
//! steps down (or dies: its lease runs out), the next one takes over, with a
//! higher term.
//!
//! The term is a fencing token: the leader sends it with every write, so a
//! deposed leader that still writes is refused by the resource.
//!
//! On embedded SQLite (no server), or on the backend `LOCKKIT_URL` names:
//!
//! ```text
//! cargo run --example leader_worker
//! ```

#![allow(clippy::print_stdout)] // An example prints what it does.

use std::time::Duration;

use lockkit::{FencingToken, Leadership, LockError};
use tokio::task::JoinSet;

const CANDIDATES: usize = 3;
const ROUNDS_EACH: usize = 2;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scratch = tempfile::tempdir()?;
    let url = std::env::var("LOCKKIT_URL")
        .unwrap_or_else(|_| format!("sqlite://{}", scratch.path().join("locks.db").display()));
    let mut candidates = JoinSet::new();
    for node in 0..CANDIDATES {
        let locker = lockkit::connect(&url).await?;
        candidates.spawn(async move {
            let election = locker.election("scheduler").ttl(Duration::from_secs(5));
            let leading = election.campaign(format!("node-{node}")).await?;
            let term = leading.term();
            let seen = election.leader().await?.and_then(|l| l.value);
            println!("node {node} leads in term {term} (the election reads {seen:?})");
            lead(node, &leading).await?;
            leading.resign().await?;
            println!("node {node} stepped down");
            Ok::<FencingToken, LockError>(term)
        });
    }
    let mut terms = Vec::new();
    while let Some(done) = candidates.join_next().await {
        terms.push(done??);
    }
    terms.sort();
    terms.dedup();
    let shown: Vec<String> = terms.iter().map(ToString::to_string).collect();
    println!(
        "{CANDIDATES} candidates led one at a time, in terms {}",
        shown.join(", ")
    );
    if terms.len() != CANDIDATES {
        return Err("two candidates led in the same term".into());
    }
    Ok(())
}

/// The leader's work: a few rounds, each stamped with the term, stopping at once
/// if the leadership is lost.
async fn lead(node: usize, leading: &Leadership) -> Result<(), LockError> {
    let lost = leading.lost();
    tokio::pin!(lost);
    for round in 0..ROUNDS_EACH {
        tokio::select! {
            reason = &mut lost => {
                println!("node {node} lost the lead ({reason}); stopping");
                return Ok(());
            }
            () = tokio::time::sleep(Duration::from_millis(50)) => {
                println!("  node {node}: round {round}, written with term {}", leading.term());
            }
        }
    }
    Ok(())
}
