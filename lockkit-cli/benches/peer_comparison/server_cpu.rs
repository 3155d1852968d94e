//! The CPU time a server spent, read from `/proc`: every thread of the server's
//! process and of the processes it forked (PostgreSQL's backends), so that the
//! report can show what one acquire+release pair cost the server, beside what it
//! cost in time.

use std::collections::HashMap;
use std::time::Duration;

/// One backend's server processes, by PID.
#[derive(Debug, Clone, Default)]
pub(crate) struct ServerCpu {
    pids: Vec<u32>,
}

/// The CPU time each thread of the servers and of their children had run at
/// one moment, by thread id.
#[derive(Debug, Clone, Default)]
pub(crate) struct Snapshot(HashMap<u32, u64>);

impl ServerCpu {
    pub(crate) fn new(pids: impl IntoIterator<Item = Option<u32>>) -> Self {
        Self {
            pids: pids.into_iter().flatten().collect(),
        }
    }

    /// The CPU time (user and system) of every thread of the servers and their
    /// children now, from each thread's `schedstat` (nanoseconds, unlike
    /// `stat`'s 10 ms ticks); `None` with no PID known or where `/proc` cannot
    /// tell.
    pub(crate) fn snapshot(&self) -> Option<Snapshot> {
        if self.pids.is_empty() {
            return None;
        }
        let mut threads = HashMap::new();
        for &pid in &self.pids {
            add_tree(pid, 0, &mut threads)?;
        }
        Some(Snapshot(threads))
    }
}

impl Snapshot {
    /// The CPU time run since `before` by the threads alive now, each against
    /// its own reading in `before` (none if it is new). A thread that ended in
    /// between counts for nothing: only what it ran from `before` to its exit
    /// is lost. A difference of totals lost its whole past instead, as when one
    /// of the runner's own PostgreSQL backends (a round-trip block's, a request
    /// count's) exits a few milliseconds after its client closed.
    pub(crate) fn since(&self, before: &Snapshot) -> Duration {
        let ns = self
            .0
            .iter()
            .map(|(tid, ns)| ns.saturating_sub(before.0.get(tid).copied().unwrap_or(0)))
            .sum();
        Duration::from_nanos(ns)
    }
}

/// Adds the run time of `pid`'s threads and of its children's, recursively, to
/// `threads`.
fn add_tree(pid: u32, depth: u32, threads: &mut HashMap<u32, u64>) -> Option<()> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    for task in tasks.flatten() {
        let dir = task.path();
        let Ok(schedstat) = std::fs::read_to_string(dir.join("schedstat")) else {
            continue;
        };
        let ns = schedstat
            .split_whitespace()
            .next()
            .and_then(|ns| ns.parse::<u64>().ok())?;
        let tid = task.file_name().to_str().and_then(|t| t.parse().ok())?;
        threads.insert(tid, ns);
        if depth < 2 {
            let children = std::fs::read_to_string(dir.join("children")).unwrap_or_default();
            for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                // A child that ended since it was listed has nothing to add.
                let _ = add_tree(child, depth + 1, threads);
            }
        }
    }
    Some(())
}
