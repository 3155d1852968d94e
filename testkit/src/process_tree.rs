//! A server's processes, read from `/proc`: its process group, and every
//! descendant that left the group. PostgreSQL's children each start a session of
//! their own (`setsid()` in `InitPostmasterChild`), so a signal to the
//! postmaster's group misses them, and they outlive a SIGKILLed postmaster for a
//! moment, still attached to its shared memory: a restart then fails with
//! "pre-existing shared memory block is still in use".

use std::collections::HashMap;

/// One process's line in `/proc/<pid>/stat`: the fields this module reads.
#[derive(Debug, Clone, Copy)]
struct Stat {
    state: char,
    ppid: i32,
    pgrp: i32,
}

/// Fields 3 to 5 of a `stat` file (after the command name in parentheses, which
/// may itself contain spaces).
fn stat(path: &str) -> Option<Stat> {
    let text = std::fs::read_to_string(path).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(Stat { state, ppid, pgrp })
}

/// Every process now running, by pid.
fn processes() -> HashMap<i32, Stat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return HashMap::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| Some((pid, stat(&format!("/proc/{pid}/stat"))?)))
        .collect()
}

/// The processes of the server whose leader is `leader`: the members of its
/// process group, and their descendants wherever they went, `leader` first.
pub(crate) fn members(leader: i32) -> Vec<i32> {
    let all = processes();
    let mut found: Vec<i32> = vec![leader];
    found.extend(
        all.iter()
            .filter(|(pid, s)| s.pgrp == leader && **pid != leader)
            .map(|(pid, _)| *pid),
    );
    // Descendants, breadth first: a bounded walk, since each pid is added once.
    let mut next = 0;
    while next < found.len() {
        let parent = found[next];
        for (pid, s) in &all {
            if s.ppid == parent && !found.contains(pid) {
                found.push(*pid);
            }
        }
        next += 1;
    }
    found.retain(|pid| all.contains_key(pid));
    found
}

/// Whether none of `pids` runs any more (gone, or a zombie).
pub(crate) fn all_gone(pids: &[i32]) -> bool {
    pids.iter()
        .all(|pid| stat(&format!("/proc/{pid}/stat")).is_none_or(|s| matches!(s.state, 'Z' | 'X')))
}

/// Whether every thread of every one of `pids` is stopped (state `T`), read
/// from `/proc/<pid>/task/<tid>/stat`.
pub(crate) fn all_stopped(pids: &[i32]) -> bool {
    pids.iter().all(|pid| {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return true;
        };
        tasks.flatten().all(|task| {
            let path = task.path().join("stat");
            stat(&path.display().to_string())
                .is_none_or(|s| matches!(s.state, 'T' | 't' | 'Z' | 'X'))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_that_starts_its_own_session_is_still_a_member() {
        use std::os::unix::process::CommandExt;
        use std::time::{Duration, Instant};

        // sh's background child is no group leader, so setsid(1) calls setsid()
        // in it and execs sleep: a child outside the leader's group.
        let mut parent = std::process::Command::new("sh")
            .args(["-c", "setsid sleep 30 & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let leader = parent.id() as i32;
        let outside = |found: &[i32]| {
            let all = processes();
            found
                .iter()
                .copied()
                .find(|pid| all.get(pid).is_some_and(|s| s.pgrp != leader))
        };
        let until = Instant::now() + Duration::from_secs(5);
        let mut found = members(leader);
        while outside(&found).is_none() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
            found = members(leader);
        }
        assert!(
            outside(&found).is_some(),
            "no member outside the group: {found:?}"
        );
        for pid in &found {
            let _ = rustix::process::kill_process(
                rustix::process::Pid::from_raw(*pid).unwrap(),
                rustix::process::Signal::KILL,
            );
        }
        let _ = parent.wait();
        let until = Instant::now() + Duration::from_secs(5);
        while !all_gone(&found) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(all_gone(&found), "{found:?}");
    }
}
