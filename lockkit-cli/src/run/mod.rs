//! `lockkit run [URL] --key K [--ttl T] [--wait W] [--fair] -- CMD ARGS…`: runs a command
//! while holding a lock, as `flock(1)` or `consul lock` do.
//!
//! The lock is taken with the watchdog (renewed every TTL/3 while the command runs)
//! and released when the command has exited — never before. The command gets the
//! fencing token in `LOCKKIT_FENCING_TOKEN` (and the key in `LOCKKIT_KEY`).
//!
//! - **Lost lock:** the command's process group is sent `--signal` (default TERM),
//!   then KILL after `--grace`; `lockkit run` exits 3.
//! - **lockkit stopped** (TERM, INT, HUP): the signal is passed on to the command's
//!   process group; after `--grace` it is killed; then the lock is released, and
//!   lockkit exits as the command did. While still waiting for the lock, it exits
//!   128 + the signal and runs nothing.
//! - **lockkit killed** (KILL): the kernel kills the command with it (the
//!   parent-death signal, [`exec`]); the lock frees when its lease runs out.
//!
//! The command leads a process group of its own, so signals reach what it started
//! too; with `--foreground` it stays in lockkit's group (it can then read from the
//! terminal, and only the command itself is signalled).

pub(crate) mod command;
pub(crate) mod exec;
pub(crate) mod signals;

use std::process::ExitCode;
use std::time::Duration;

use lockkit::{LockError, LockGuard, Locker};
use rustix::process::Signal;

use self::command::Command;
use self::signals::{Stop, name};
use crate::duration::parse_duration;
use crate::url_arg::OneUrl;

/// Exit status when the lock was lost while the command ran.
pub(crate) const EXIT_LOST: u8 = 3;
/// Exit status when the lock could not be taken within `--wait`.
const EXIT_NOT_ACQUIRED: u8 = 4;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    url: OneUrl,
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
    /// Wait in arrival order, behind every live waiter that came before, where
    /// the backend can; elsewhere nothing runs, and the refusal is the error.
    #[arg(long)]
    fair: bool,
    #[command(flatten)]
    cmd: CommandArgs,
}

/// How a command runs under a lock or a leadership: `run` and `elect` share it.
#[derive(Debug, clap::Args)]
pub(crate) struct CommandArgs {
    /// The signal sent to the command when the lock (or leadership) is lost (TERM,
    /// INT, HUP, KILL, USR1, USR2).
    #[arg(long, default_value = "TERM", value_parser = parse_signal)]
    pub(crate) signal: Signal,
    /// How long the command has to exit after a signal before it is killed.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub(crate) grace: Duration,
    /// Keep the command in lockkit's process group: it can read from the terminal,
    /// and signals go to it alone, not to what it started.
    #[arg(long)]
    pub(crate) foreground: bool,
    /// Say on stderr when the lock is waited for, taken and released.
    #[arg(long, short)]
    pub(crate) verbose: bool,
    /// The command and its arguments (after `--`).
    #[arg(required = true, last = true)]
    pub(crate) command: Vec<String>,
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

/// The exit status of a process ended by `signal`, as a shell reports it.
pub(crate) fn died_of(signal: Signal) -> ExitCode {
    ExitCode::from((128 + signal.as_raw()).clamp(0, 255) as u8)
}

pub(crate) async fn run(args: Args) -> Result<ExitCode, LockError> {
    // From here on TERM, INT and HUP are ours to handle: lockkit never dies of
    // them with its command still running.
    let mut stop =
        Stop::catch().map_err(|e| LockError::Config(format!("cannot catch signals: {e}")))?;
    let url = args.url.get()?;
    let say = |what: String| {
        if args.cmd.verbose {
            eprintln!("lockkit run: {what}");
        }
    };
    let locker = tokio::select! {
        locker = lockkit::connect(&url) => locker?,
        signal = stop.next() => return Ok(died_of(signal)),
    };
    let guard = tokio::select! {
        guard = acquire(&locker, &args, &say) => match guard {
            Ok(guard) => guard,
            Err(e @ (LockError::Timeout { .. } | LockError::Contended { .. })) => {
                eprintln!("lockkit run: {e}");
                return Ok(ExitCode::from(EXIT_NOT_ACQUIRED));
            }
            Err(e) => return Err(e),
        },
        // Dropping the acquire cancels it; nothing has run.
        signal = stop.next() => {
            say(format!("got SIG{} while waiting; the command did not run", name(signal)));
            return Ok(died_of(signal));
        }
    };
    say(format!("holding `{}` (token {})", args.key, guard.token()));
    let env = [
        ("LOCKKIT_FENCING_TOKEN", guard.token().to_string()),
        ("LOCKKIT_KEY", args.key.clone()),
    ];
    let mut command = match Command::spawn(&args.cmd.command, &env, args.cmd.foreground) {
        Ok(c) => c,
        Err(e) => {
            let _ = guard.release().await;
            eprintln!("lockkit run: cannot start the command: {e}");
            return Ok(ExitCode::from(exec::EXIT_NOT_FOUND));
        }
    };
    let lost = guard.lost();
    tokio::pin!(lost);
    let status = tokio::select! {
        status = command.wait() => status,
        reason = &mut lost => {
            eprintln!("lockkit run: lock `{}` lost ({reason}); stopping the command", args.key);
            let _ = command.stop(args.cmd.signal, args.cmd.grace, &mut stop).await;
            drop(guard);
            return Ok(ExitCode::from(EXIT_LOST));
        }
        signal = stop.next() => {
            say(format!("got SIG{}; passing it to the command", name(signal)));
            command.stop(signal, args.cmd.grace, &mut stop).await
        }
    };
    let status = status.map_err(|e| LockError::Config(format!("waiting for the command: {e}")))?;
    // Only now, with the command gone, does the lock go.
    if let Err(e) = guard.release().await {
        eprintln!("lockkit run: the command finished, but {e}");
        return Ok(ExitCode::from(EXIT_LOST));
    }
    say(format!("released `{}`", args.key));
    Ok(exit_code(status))
}

/// Takes the lock as `args` say, saying (with `--verbose`) when it has to wait.
async fn acquire(
    locker: &Locker,
    args: &Args,
    say: &impl Fn(String),
) -> Result<LockGuard, LockError> {
    let request = || {
        let request = locker.lock(args.key.as_str()).ttl(args.ttl);
        if args.fair { request.fair() } else { request }
    };
    match request().no_wait().await {
        Err(LockError::Contended { .. }) => {}
        other => return other,
    }
    say(format!("lock `{}` is held; waiting", args.key));
    let request = request();
    match args.wait {
        Some(w) => request.wait(w).await,
        None => request.wait_forever().await,
    }
}

/// The command's exit status as ours: its code, or 128 + the signal that ended it.
pub(crate) fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => ExitCode::from(code.clamp(0, 255) as u8),
        (None, Some(sig)) => ExitCode::from((128 + sig).clamp(0, 255) as u8),
        _ => ExitCode::FAILURE,
    }
}

#[cfg(test)]
mod tests {
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
