//! `lockkit elect URL NAME [--value V] [--restart] -- CMD ARGS…`: runs a command
//! only while this process leads the election `NAME`, as `etcdctl elect` and
//! `consul lock` do.
//!
//! It campaigns (waits until it leads), then runs the command with the term in
//! `LOCKKIT_TERM` and `LOCKKIT_FENCING_TOKEN` (the same number) and the election's
//! name in `LOCKKIT_ELECTION`. Leadership is renewed by the watchdog.
//!
//! - **Lost leadership:** the command is stopped as `lockkit run` stops it
//!   (`--signal`, then KILL after `--grace`); then, with `--restart`, lockkit
//!   campaigns again, and otherwise exits 3.
//! - **The command exits:** lockkit resigns. With `--restart` it campaigns again;
//!   otherwise it exits as the command did.
//! - **lockkit stopped** (TERM, INT, HUP): the signal goes to the command, then
//!   lockkit resigns and exits as the command did; while campaigning, it exits
//!   128 + the signal.
//! - **lockkit killed:** the command dies with it, and the next candidate leads
//!   once the lease (`--ttl`) runs out.

use std::process::ExitCode;
use std::time::Duration;

use lockkit::{LockError, Locker, default_label};

use crate::duration::parse_duration;
use crate::run::command::Command;
use crate::run::signals::{Stop, name};
use crate::run::{CommandArgs, EXIT_LOST, died_of, exec, exit_code};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The backend and the election's name (the lock the leader holds).
    #[command(flatten)]
    target: crate::url_arg::UrlAndName,
    /// The value the leader stores, for `leader` and `inspect` to show (default:
    /// this process's label, host/pid).
    #[arg(long)]
    value: Option<String>,
    /// The leader's lease, renewed every ttl/3: if this process dies, another
    /// candidate leads at most this long after.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    ttl: Duration,
    /// Campaign again after the command exits or leadership is lost.
    #[arg(long)]
    restart: bool,
    #[command(flatten)]
    cmd: CommandArgs,
}

/// How one term ended.
enum Term {
    /// The command exited by itself, or lockkit was stopped: exit with this.
    Done(ExitCode),
    /// The command exited; campaign again if `--restart` says so.
    Exited(ExitCode),
    /// Leadership was lost and the command stopped.
    Lost,
}

pub(crate) async fn run(args: Args) -> Result<ExitCode, LockError> {
    let mut stop =
        Stop::catch().map_err(|e| LockError::Config(format!("cannot catch signals: {e}")))?;
    let say = |what: String| {
        if args.cmd.verbose {
            eprintln!("lockkit elect: {what}");
        }
    };
    let (url, name) = args.target.get()?;
    let locker = tokio::select! {
        locker = lockkit::connect(&url) => locker?,
        signal = stop.next() => return Ok(died_of(signal)),
    };
    loop {
        let ended = term(&locker, (&args, &name), &mut stop, &say).await?;
        match ended {
            Term::Done(code) => return Ok(code),
            Term::Exited(code) if !args.restart => return Ok(code),
            Term::Lost if !args.restart => return Ok(ExitCode::from(EXIT_LOST)),
            Term::Exited(_) | Term::Lost => say("campaigning again (--restart)".into()),
        }
    }
}

/// One campaign and, once leading, one run of the command.
async fn term(
    locker: &Locker,
    (args, election_name): (&Args, &str),
    stop: &mut Stop,
    say: &impl Fn(String),
) -> Result<Term, LockError> {
    let election = locker.election(election_name).ttl(args.ttl);
    let value = args.value.clone().unwrap_or_else(default_label);
    say(format!("campaigning for `{}`", election_name));
    let leading = tokio::select! {
        leading = election.campaign(value) => leading?,
        // Dropping the campaign cancels it; nothing has run.
        signal = stop.next() => {
            say(format!("got SIG{} while campaigning; the command did not run", name(signal)));
            return Ok(Term::Done(died_of(signal)));
        }
    };
    say(format!(
        "leading `{}` (term {})",
        election_name,
        leading.term()
    ));
    let env = [
        ("LOCKKIT_TERM", leading.term().to_string()),
        ("LOCKKIT_FENCING_TOKEN", leading.term().to_string()),
        ("LOCKKIT_ELECTION", election_name.to_owned()),
    ];
    let mut command = match Command::spawn(&args.cmd.command, &env, args.cmd.foreground) {
        Ok(c) => c,
        Err(e) => {
            let _ = leading.resign().await;
            eprintln!("lockkit elect: cannot start the command: {e}");
            return Ok(Term::Done(ExitCode::from(exec::EXIT_NOT_FOUND)));
        }
    };
    let lost = leading.lost();
    tokio::pin!(lost);
    let (status, stopped) = tokio::select! {
        status = command.wait() => (status, false),
        reason = &mut lost => {
            eprintln!(
                "lockkit elect: leadership of `{}` lost ({reason}); stopping the command",
                election_name
            );
            let _ = command.stop(args.cmd.signal, args.cmd.grace, stop).await;
            drop(leading);
            return Ok(Term::Lost);
        }
        signal = stop.next() => {
            say(format!("got SIG{}; passing it to the command", name(signal)));
            (command.stop(signal, args.cmd.grace, stop).await, true)
        }
    };
    let status = status.map_err(|e| LockError::Config(format!("waiting for the command: {e}")))?;
    // Only now, with the command gone, does leadership go.
    if let Err(e) = leading.resign().await {
        eprintln!("lockkit elect: the command finished, but {e}");
        return Ok(if stopped {
            Term::Done(ExitCode::from(EXIT_LOST))
        } else {
            Term::Lost
        });
    }
    say(format!("resigned `{}`", election_name));
    let code = exit_code(status);
    Ok(if stopped {
        Term::Done(code)
    } else {
        Term::Exited(code)
    })
}
