//! The System V shared memory segment a killed server leaves behind.

use std::path::Path;
use std::process::{Command, Stdio};

/// Removes the segment `pid_file` names (PostgreSQL's `postmaster.pid`, whose
/// seventh line holds the segment's key and id) once no process is attached to
/// it. Does nothing when the file names none, or the segment is gone or in use.
pub(crate) fn remove_named_in(pid_file: &Path) {
    let Some(id) = segment_of(pid_file) else {
        return;
    };
    if attached(id) != Some(0) {
        return;
    }
    let _ = Command::new("ipcrm")
        .args(["-m", &id.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// The id of the segment `pid_file` names.
pub(crate) fn segment_of(pid_file: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(pid_file).ok()?;
    text.lines().nth(6)?.split_whitespace().nth(1)?.parse().ok()
}

/// How many processes are attached to segment `id`; `None` when there is no
/// such segment.
pub(crate) fn attached(id: u64) -> Option<u64> {
    let table = std::fs::read_to_string("/proc/sysvipc/shm").ok()?;
    // Columns: key shmid perms size cpid lpid nattch …
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.get(1)?.parse::<u64>().ok()? != id {
            return None;
        }
        fields.get(6)?.parse().ok()
    })
}
