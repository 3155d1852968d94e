//! `lockkit __exec PARENT -- CMD ARGS…`: the first step of the command `lockkit run`
//! starts. It asks the kernel to kill it when its parent dies (the parent-death
//! signal, which survives `exec`), checks that the parent is still there, and
//! replaces itself with the command.
//!
//! That is how a `lockkit run` killed outright (SIGKILL, the OOM killer), which can
//! forward nothing, still takes its command with it: the command never keeps
//! writing while another holder has the lock. Setting the signal needs no
//! `unsafe`: it is done here, in the new process, rather than between `fork` and
//! `exec`.

use std::os::unix::process::CommandExt;
use std::process::ExitCode;

use rustix::process::{Pid, Signal, getppid, set_parent_process_death_signal};

/// Exit status when the command cannot be run because it is not executable.
pub(crate) const EXIT_CANNOT_EXECUTE: u8 = 126;
/// Exit status when the command cannot be found (or started for another reason).
pub(crate) const EXIT_NOT_FOUND: u8 = 127;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The pid of the `lockkit run` that started us.
    parent: i32,
    /// The command and its arguments.
    #[arg(required = true, last = true)]
    command: Vec<String>,
}

/// Becomes the command; returns only if that fails.
pub(crate) fn run(args: Args) -> ExitCode {
    if let Err(e) = set_parent_process_death_signal(Some(Signal::KILL)) {
        eprintln!("lockkit run: cannot set the parent-death signal: {e}");
        return ExitCode::from(EXIT_NOT_FOUND);
    }
    // The parent may have died before the signal was set: then nobody holds the
    // lock for us, and we must not run.
    if getppid() != Pid::from_raw(args.parent) {
        return ExitCode::from(128 + 9);
    }
    let Some((program, rest)) = args.command.split_first() else {
        return ExitCode::from(EXIT_NOT_FOUND);
    };
    let error = std::process::Command::new(program).args(rest).exec();
    eprintln!("lockkit run: cannot start `{program}`: {error}; check the command and your PATH");
    ExitCode::from(match error.kind() {
        std::io::ErrorKind::PermissionDenied => EXIT_CANNOT_EXECUTE,
        _ => EXIT_NOT_FOUND,
    })
}
