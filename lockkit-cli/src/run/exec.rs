//! `lockkit __exec PARENT -- CMD ARGS…`: the first step of the command `lockkit run`
//! (and `lockkit elect`) starts. It asks the kernel to signal it when its parent
//! dies (the parent-death signal), checks that the parent is still there, and then:
//!
//! - in the command's own process group (the default), it stays as the group's
//!   supervisor: it starts the command, and when its parent dies it kills the
//!   whole group, so that nothing the command started (a shell's children, a
//!   pipeline) keeps running after the lock has gone to someone else. Signals
//!   `lockkit run` sends reach the group, the command included;
//! - in the foreground (`--foreground`, the command stays in the terminal's
//!   group), it replaces itself with the command, which dies with its parent
//!   (the parent-death signal survives `exec`); what the command itself starts
//!   is not followed there.
//!
//! That is how a `lockkit run` killed outright (SIGKILL, the OOM killer), which can
//! forward nothing, still takes its command with it. Setting the signal needs no
//! `unsafe`: it is done here, in the new process, rather than between `fork` and
//! `exec`.

use std::os::unix::process::CommandExt;
use std::process::ExitCode;

use rustix::process::{
    Pid, Signal, getpgrp, getpid, getppid, kill_process_group, set_parent_process_death_signal,
};
use tokio::signal::unix::{SignalKind, signal};

/// Exit status when the command cannot be run because it is not executable.
pub(crate) const EXIT_CANNOT_EXECUTE: u8 = 126;
/// Exit status when the command cannot be found (or started for another reason).
pub(crate) const EXIT_NOT_FOUND: u8 = 127;
/// Exit status of a process killed by SIGKILL, as a shell reports it.
const EXIT_KILLED: u8 = 128 + 9;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The pid of the `lockkit run` that started us.
    parent: i32,
    /// The command and its arguments.
    #[arg(required = true, last = true)]
    command: Vec<String>,
}

/// Runs the command: as its group's supervisor, or by becoming it.
pub(crate) fn run(args: Args) -> ExitCode {
    let leads_a_group = getpgrp() == getpid();
    // A supervisor catches the signal and kills its group; a process that becomes
    // the command just dies.
    let death_signal = if leads_a_group {
        Signal::TERM
    } else {
        Signal::KILL
    };
    if let Err(e) = set_parent_process_death_signal(Some(death_signal)) {
        eprintln!("lockkit run: cannot set the parent-death signal: {e}");
        return ExitCode::from(EXIT_NOT_FOUND);
    }
    let Some((program, rest)) = args.command.split_first() else {
        return ExitCode::from(EXIT_NOT_FOUND);
    };
    let mut command = std::process::Command::new(program);
    command.args(rest);
    if !leads_a_group {
        // The parent may have died before the signal was set: then nobody holds
        // the lock for us, and we must not run.
        if !parent_lives(args.parent) {
            return ExitCode::from(EXIT_KILLED);
        }
        return cannot_start(program, &command.exec());
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("lockkit run: cannot supervise the command: {e}");
            return ExitCode::from(EXIT_NOT_FOUND);
        }
    };
    runtime.block_on(supervise(args.parent, program, command))
}

/// Starts `command` and waits for it, killing the whole group if our parent
/// dies first; exits as the command did.
async fn supervise(parent: i32, program: &str, command: std::process::Command) -> ExitCode {
    // Caught from here on: the parent-death signal, and whatever `lockkit run`
    // sends the group (the command gets those too, and answers them itself).
    let mut caught = match Caught::new() {
        Ok(caught) => caught,
        Err(e) => {
            eprintln!("lockkit run: cannot supervise the command: {e}");
            return ExitCode::from(EXIT_NOT_FOUND);
        }
    };
    if !parent_lives(parent) {
        return ExitCode::from(EXIT_KILLED);
    }
    let mut child = match tokio::process::Command::from(command).spawn() {
        Ok(child) => child,
        Err(e) => return cannot_start(program, &e),
    };
    loop {
        tokio::select! {
            status = child.wait() => {
                return match status {
                    Ok(status) => super::exit_code(status),
                    Err(_) => ExitCode::FAILURE,
                };
            }
            () = caught.next() => {
                if !parent_lives(parent) {
                    // Everything in the group goes, this supervisor with it.
                    let _ = kill_process_group(getpgrp(), Signal::KILL);
                    return ExitCode::from(EXIT_KILLED);
                }
            }
        }
    }
}

/// The signals a supervisor catches: the parent-death signal (TERM) and those
/// `lockkit run` may pass to the group.
struct Caught([tokio::signal::unix::Signal; 6]);

impl Caught {
    fn new() -> std::io::Result<Self> {
        Ok(Self([
            signal(SignalKind::terminate())?,
            signal(SignalKind::interrupt())?,
            signal(SignalKind::hangup())?,
            signal(SignalKind::quit())?,
            signal(SignalKind::user_defined1())?,
            signal(SignalKind::user_defined2())?,
        ]))
    }

    /// Returns when any of them arrives.
    async fn next(&mut self) {
        let [a, b, c, d, e, f] = &mut self.0;
        tokio::select! {
            _ = a.recv() => {}
            _ = b.recv() => {}
            _ = c.recv() => {}
            _ = d.recv() => {}
            _ = e.recv() => {}
            _ = f.recv() => {}
        }
    }
}

/// Whether the `lockkit run` that started us is still our parent.
fn parent_lives(parent: i32) -> bool {
    getppid() == Pid::from_raw(parent)
}

/// Says why `program` could not start: 126 if it is not executable, else 127.
fn cannot_start(program: &str, error: &std::io::Error) -> ExitCode {
    eprintln!("lockkit run: cannot start `{program}`: {error}; check the command and your PATH");
    ExitCode::from(match error.kind() {
        std::io::ErrorKind::PermissionDenied => EXIT_CANNOT_EXECUTE,
        _ => EXIT_NOT_FOUND,
    })
}
