//! The command under `lockkit run`: started through `lockkit __exec` (so it dies
//! with us, see [`super::exec`]), in a process group of its own unless
//! `--foreground`, and stopped as a whole. Whatever is left of its group when it
//! exits is killed.

use std::io;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process, kill_process_group};
use tokio::time::{Instant, sleep_until};

use super::signals::Stop;

/// A started command.
#[derive(Debug)]
pub(crate) struct Command {
    child: tokio::process::Child,
    pid: Option<Pid>,
    /// Whether it leads a process group of its own (signals go to the group).
    group: bool,
}

impl Command {
    /// Starts `argv` with `env` set. Unless `foreground`, it leads a new process
    /// group, so that a signal reaches whatever it started too; in the foreground
    /// it stays in ours and can read from the terminal.
    ///
    /// The spawn happens on the thread that runs `lockkit run`'s future (the main
    /// thread, under `block_on`): the parent-death signal follows the thread that
    /// forked, so it must be one that lives as long as the process.
    pub(crate) fn spawn(
        argv: &[String],
        env: &[(&str, String)],
        foreground: bool,
    ) -> io::Result<Self> {
        let me = std::env::current_exe()?;
        let mut cmd = tokio::process::Command::new(me);
        cmd.arg("__exec")
            .arg(std::process::id().to_string())
            .arg("--")
            .args(argv)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::inherit())
            .kill_on_drop(true);
        if !foreground {
            cmd.process_group(0);
        }
        let child = cmd.spawn()?;
        let pid = child.id().and_then(|id| Pid::from_raw(id as i32));
        Ok(Self {
            child,
            pid,
            group: !foreground,
        })
    }

    /// Waits for it to exit; whatever it left running in its group is killed
    /// then, so that nothing it started outlives the lock.
    pub(crate) async fn wait(&mut self) -> io::Result<ExitStatus> {
        let status = self.child.wait().await;
        if self.group {
            self.signal(Signal::KILL);
        }
        status
    }

    /// Sends `signal` to its group (or to it alone, in the foreground).
    pub(crate) fn signal(&self, signal: Signal) {
        let Some(pid) = self.pid else { return };
        // ESRCH: everything has exited already.
        let _ = if self.group {
            kill_process_group(pid, signal)
        } else {
            kill_process(pid, signal)
        };
    }

    /// Stops it: `first`, then KILL if it has not exited after `grace`; any signal
    /// `stop` receives meanwhile is passed on too. Whatever is left in its group is
    /// killed once it has exited. Returns its exit status.
    pub(crate) async fn stop(
        &mut self,
        first: Signal,
        grace: Duration,
        stop: &mut Stop,
    ) -> io::Result<ExitStatus> {
        self.signal(first);
        let deadline = Instant::now() + grace;
        let status = loop {
            tokio::select! {
                status = self.child.wait() => break Some(status),
                () = sleep_until(deadline) => break None,
                signal = stop.next() => self.signal(signal),
            }
        };
        let status = match status {
            Some(status) => status,
            None => {
                self.signal(Signal::KILL);
                self.child.wait().await
            }
        };
        if self.group {
            self.signal(Signal::KILL);
        }
        status
    }
}
