//! `lockkit run --url U --key K [--ttl T] [--wait W] -- CMD ARGS…`: runs a command
//! while holding a lock, as `flock(1)` or `consul lock` do.
//!
//! The lock is taken with the watchdog (renewed every TTL/3 while the command runs)
//! and released when it exits. The command gets the fencing token in
//! `LOCKKIT_FENCING_TOKEN` (and the key in `LOCKKIT_KEY`), to pass on with its
//! writes. If the lock is lost while it runs, the command is sent `--signal`
//! (default TERM), then KILL after `--grace`, and `lockkit run` exits with 3.

use std::process::{ExitCode, Stdio};
use std::time::Duration;

use lockkit::LockError;

use crate::duration::parse_duration;
use rustix::process::{Pid, Signal, kill_process};

/// Exit status when the lock could not be taken within `--wait`.
const EXIT_NOT_ACQUIRED: u8 = 4;
/// Exit status when the lock was lost while the command ran.
const EXIT_LOST: u8 = 3;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The backend, e.g. sqlite:///tmp/locks.db (also read from LOCKKIT_URL).
    #[arg(long, env = "LOCKKIT_URL")]
    url: String,
    /// The lock's name.
    #[arg(long)]
    key: String,
    /// The watchdog lease: renewed every ttl/3 while the command runs; if this
    /// process dies, the lock is free at most this long after.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    ttl: Duration,
    /// How long to wait for the lock (default: as long as it takes).
    #[arg(long, value_parser = parse_duration)]
    wait: Option<Duration>,
    /// The signal sent to the command when the lock is lost (TERM, INT, HUP, KILL,
    /// USR1, USR2).
    #[arg(long, default_value = "TERM", value_parser = parse_signal)]
    signal: Signal,
    /// How long the command has to exit after that signal before it is killed.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    grace: Duration,
    /// The command and its arguments (after `--`).
    #[arg(required = true, last = true)]
    command: Vec<String>,
}

fn parse_signal(s: &str) -> Result<Signal, String> {
    Ok(
        match s.trim_start_matches("SIG").to_ascii_uppercase().as_str() {
            "TERM" => Signal::TERM,
            "INT" => Signal::INT,
            "HUP" => Signal::HUP,
            "KILL" => Signal::KILL,
            "USR1" => Signal::USR1,
            "USR2" => Signal::USR2,
            _ => {
                return Err(format!(
                    "unknown signal `{s}`; use TERM, INT, HUP, KILL, USR1 or USR2"
                ));
            }
        },
    )
}

pub(crate) async fn run(args: Args) -> Result<ExitCode, LockError> {
    let locker = lockkit::connect(&args.url).await?;
    let request = locker.lock(args.key.as_str()).ttl(args.ttl);
    let request = match args.wait {
        Some(w) => request.wait(w),
        None => request.wait_forever(),
    };
    let guard = match request.await {
        Ok(g) => g,
        Err(e @ (LockError::Timeout { .. } | LockError::Contended { .. })) => {
            eprintln!("lockkit run: {e}");
            return Ok(ExitCode::from(EXIT_NOT_ACQUIRED));
        }
        Err(e) => return Err(e),
    };
    let Some((program, rest)) = args.command.split_first() else {
        return Err(LockError::Config("no command given after `--`".into()));
    };
    let mut child = match tokio::process::Command::new(program)
        .args(rest)
        .env("LOCKKIT_FENCING_TOKEN", guard.token().to_string())
        .env("LOCKKIT_KEY", &args.key)
        .stdin(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            let _ = guard.release().await;
            return Err(LockError::Config(format!(
                "cannot start `{program}`: {e}; check the command and your PATH"
            )));
        }
    };
    let lost = guard.lost();
    tokio::select! {
        status = child.wait() => {
            let status = status.map_err(|e| LockError::Config(format!("waiting for `{program}`: {e}")))?;
            if let Err(e) = guard.release().await {
                eprintln!("lockkit run: the command finished, but {e}");
                return Ok(ExitCode::from(EXIT_LOST));
            }
            Ok(exit_code(status))
        }
        reason = lost => {
            eprintln!("lockkit run: lock `{}` lost ({reason}); stopping the command", args.key);
            if let Some(pid) = child.id().and_then(|p| Pid::from_raw(p as i32)) {
                let _ = kill_process(pid, args.signal);
            }
            if tokio::time::timeout(args.grace, child.wait()).await.is_err() {
                let _ = child.kill().await;
            }
            drop(guard);
            Ok(ExitCode::from(EXIT_LOST))
        }
    }
}

/// The command's exit status as ours: its code, or 128 + the signal that ended it.
fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => ExitCode::from(code.clamp(0, 255) as u8),
        (None, Some(sig)) => ExitCode::from((128 + sig).clamp(0, 255) as u8),
        _ => ExitCode::FAILURE,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn durations_and_signals_parse_or_say_what_to_write() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("soon").unwrap_err().contains("30s"));
        assert!(parse_duration("3d").unwrap_err().contains("unit"));
        assert_eq!(parse_signal("SIGINT"), Ok(Signal::INT));
        assert!(parse_signal("FOO").unwrap_err().contains("TERM"));
    }
}
