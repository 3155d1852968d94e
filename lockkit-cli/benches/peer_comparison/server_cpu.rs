//! The CPU time a server spent, read from `/proc`: every thread of the server's
//! process and of the processes it forked (PostgreSQL's backends), so that the
//! report can show what one acquire+release pair cost the server, beside what it
//! cost in time.

use std::time::Duration;

/// One backend's server processes, by PID.
#[derive(Debug, Clone, Default)]
pub(crate) struct ServerCpu {
    pids: Vec<u32>,
}

impl ServerCpu {
    pub(crate) fn new(pids: impl IntoIterator<Item = Option<u32>>) -> Self {
        Self {
            pids: pids.into_iter().flatten().collect(),
        }
    }

    /// The CPU time (user and system) that the servers and their children have
    /// run so far, from each thread's `schedstat` (nanoseconds, unlike `stat`'s
    /// 10 ms ticks); `None` with no PID known or where `/proc` cannot tell.
    pub(crate) fn used(&self) -> Option<Duration> {
        if self.pids.is_empty() {
            return None;
        }
        let mut total = 0;
        for &pid in &self.pids {
            total += tree_ns(pid, 0)?;
        }
        Some(Duration::from_nanos(total))
    }
}

/// The run time of `pid`'s threads and of its children's, recursively (a
/// process that ended in between no longer counts; none of the servers' does
/// while a batch runs).
fn tree_ns(pid: u32, depth: u32) -> Option<u64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut total = 0;
    for task in tasks.flatten() {
        let dir = task.path();
        let Ok(schedstat) = std::fs::read_to_string(dir.join("schedstat")) else {
            continue;
        };
        total += schedstat
            .split_whitespace()
            .next()
            .and_then(|ns| ns.parse::<u64>().ok())?;
        if depth < 2 {
            let children = std::fs::read_to_string(dir.join("children")).unwrap_or_default();
            for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                total += tree_ns(child, depth + 1).unwrap_or(0);
            }
        }
    }
    Some(total)
}
