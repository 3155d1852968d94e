//! What `compare` checks before the first backend runs: the probes' lease, the
//! output files and the URLs' syntax.

use std::time::Duration;

use lockkit::LockError;

use super::Args;

/// The probes' lease must leave room for the stalled-holder probe to tell a grant
/// before the lease from one after it, and not make the run crawl.
const PROBE_LEASE: std::ops::RangeInclusive<Duration> =
    Duration::from_millis(100)..=Duration::from_secs(60);

/// Everything that can be checked before the first backend runs: the lease, the
/// output files (created now, so a bad path costs nothing), and each URL (an
/// invalid one ends the run; an unreachable one is reported in its column).
pub(super) fn preflight(args: &Args) -> Result<(std::fs::File, std::fs::File), LockError> {
    if !PROBE_LEASE.contains(&args.lease) {
        return Err(LockError::Config(format!(
            "--lease {} is out of range: the probes' holder needs a lease from {} to {}",
            lockkit_core::human_duration(args.lease),
            lockkit_core::human_duration(*PROBE_LEASE.start()),
            lockkit_core::human_duration(*PROBE_LEASE.end()),
        )));
    }
    if args.html == args.json {
        return Err(LockError::Config(format!(
            "--html and --json are both {}: give them different paths",
            args.html.display()
        )));
    }
    Ok((
        open_output(&args.html, "--html")?,
        open_output(&args.json, "--json")?,
    ))
}

/// Creates `path` for a report now, so that a path that cannot be written is
/// reported before anything runs.
fn open_output(path: &std::path::Path, option: &str) -> Result<std::fs::File, LockError> {
    std::fs::File::create(path).map_err(|e| {
        LockError::Config(format!(
            "cannot write {}: {e}; choose another path with {option}",
            path.display()
        ))
    })
}
