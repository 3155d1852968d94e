//! Uncontended pairs, every library in one long-lived process of its own, taken
//! in rounds: each round every library runs one batch, in an order that rotates
//! from round to round. A library's figures are all its pairs; its comparison
//! with lockkit is paired round by round (see [`crate::paired`]), so drift in the
//! machine's speed, which lasts seconds, hits both sides of each ratio alike.

use std::time::Duration;

use crate::program::{Program, Session};
use crate::results::Stats;
use crate::server_cpu::ServerCpu;

/// Pairs per batch: one library's turn in a round.
pub(crate) const BATCH: u64 = 50;

/// One library's uncontended pairs.
#[derive(Debug, Clone)]
pub(crate) struct Uncontended {
    pub(crate) stats: Stats,
    /// The summed time of its batch in each round, in nanoseconds.
    pub(crate) rounds: Vec<u64>,
    /// The servers' CPU time per pair, over its batches (where `/proc` tells).
    pub(crate) server_cpu: Option<Duration>,
}

/// `iterations` pairs of each of `programs`, in rounds of [`BATCH`], reading
/// `servers`' CPU time around each batch. A library that cannot start or fails
/// midway is left out of the later rounds, with why.
pub(crate) async fn run(
    programs: &[Program],
    iterations: u64,
    servers: &ServerCpu,
) -> Vec<Result<Uncontended, String>> {
    let mut sessions: Vec<Result<Session, String>> = Vec::new();
    for program in programs {
        eprintln!("   {}: warming up", program.library);
        sessions.push(program.pairs().await.map_err(|e| e.to_string()));
    }
    let mut samples: Vec<Vec<u64>> = vec![Vec::new(); programs.len()];
    let mut rounds: Vec<Vec<u64>> = vec![Vec::new(); programs.len()];
    // Each library's servers' CPU time over its batches; `None` once unreadable.
    let mut cpu: Vec<Option<Duration>> = vec![Some(Duration::ZERO); programs.len()];
    let count = iterations.div_ceil(BATCH).max(1);
    eprintln!("   uncontended: {count} rounds of {BATCH} pairs");
    // One reading between two batches: the end of one is the start of the next.
    let mut last = servers.snapshot();
    for round in 0..count as usize {
        for turn in 0..programs.len() {
            let i = (round + turn) % programs.len();
            let Ok(session) = &mut sessions[i] else {
                continue;
            };
            let batch = session.batch(BATCH).await;
            let after = servers.snapshot();
            cpu[i] = match (cpu[i], &last, &after) {
                (Some(sum), Some(before), Some(after)) => Some(sum + after.since(before)),
                _ => None,
            };
            last = after;
            match batch {
                Ok(ns) => {
                    rounds[i].push(ns.iter().sum());
                    samples[i].extend(ns);
                }
                Err(e) => sessions[i] = Err(e.to_string()),
            }
        }
    }
    let mut out = Vec::new();
    for (((session, ns), rounds), cpu) in sessions.into_iter().zip(samples).zip(rounds).zip(cpu) {
        let pairs = u32::try_from(ns.len()).unwrap_or(u32::MAX).max(1);
        out.push(match session {
            Ok(session) => session
                .finish()
                .await
                .map(|()| Uncontended {
                    stats: Stats::from_ns(&ns),
                    rounds,
                    server_cpu: cpu.map(|c| c / pairs),
                })
                .map_err(|e| e.to_string()),
            Err(e) => Err(e),
        });
    }
    out
}
