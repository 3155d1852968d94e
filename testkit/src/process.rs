//! One server process (and its process group, and its children that left the
//! group): start, readiness, pause, kill, restart, and cleanup on drop.

use std::fs::File;
use std::future::Future;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process, kill_process_group};

use crate::TestkitError;
use crate::process_tree;

/// How to (re)start a server: its command line, identity and readiness probe.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    pub(crate) binary: PathBuf,
    pub(crate) args: Vec<String>,
    pub(crate) uid_gid: Option<(u32, u32)>,
    pub(crate) port: u16,
    pub(crate) log: PathBuf,
    pub(crate) ready_timeout: Duration,
}

/// A running server process group. Killed (SIGKILL to the group) on drop.
#[derive(Debug)]
pub struct Server {
    spec: Spec,
    child: Option<Child>,
    /// A pid file that names the server's System V shared memory segment
    /// (PostgreSQL's `postmaster.pid`): removed once the server is killed.
    shm_pid_file: Option<PathBuf>,
}

/// Finds `name` on PATH or at an absolute path; the error says to run ci/setup.
pub(crate) fn find_binary(name: &str, env_override: &str) -> Result<PathBuf, TestkitError> {
    if let Ok(path) = std::env::var(env_override) {
        return Ok(PathBuf::from(path));
    }
    let candidate = Path::new(name);
    if candidate.is_absolute() {
        return if candidate.exists() {
            Ok(candidate.to_path_buf())
        } else {
            Err(TestkitError::NotFound {
                binary: name.to_string(),
            })
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in
        std::env::split_paths(&path).chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
    {
        let full = dir.join(name);
        if full.is_file() {
            return Ok(full);
        }
    }
    Err(TestkitError::NotFound {
        binary: name.to_string(),
    })
}

/// The last `n` lines of `path`.
pub(crate) fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

impl Server {
    pub(crate) fn spawn(spec: Spec) -> Result<Self, TestkitError> {
        let mut server = Self {
            spec,
            child: None,
            shm_pid_file: None,
        };
        server.start_process()?;
        Ok(server)
    }

    fn start_process(&mut self) -> Result<(), TestkitError> {
        let log = File::options()
            .create(true)
            .append(true)
            .open(&self.spec.log)?;
        let mut cmd = Command::new(&self.spec.binary);
        cmd.args(&self.spec.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0);
        if let Some((uid, gid)) = self.spec.uid_gid {
            cmd.uid(uid).gid(gid);
        }
        let child = cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => TestkitError::NotFound {
                binary: self.spec.binary.display().to_string(),
            },
            _ => TestkitError::Io(e),
        })?;
        self.child = Some(child);
        Ok(())
    }

    /// Polls `probe` until it returns true, or fails with the log's tail.
    pub(crate) async fn wait_ready<F, Fut>(&mut self, mut probe: F) -> Result<(), TestkitError>
    where
        F: FnMut(u16) -> Fut,
        Fut: Future<Output = bool>,
    {
        let started = Instant::now();
        while started.elapsed() < self.spec.ready_timeout {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                return Err(self.not_ready(format!("(exited early: {status})")));
            }
            if probe(self.spec.port).await {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(self.not_ready(String::new()))
    }

    fn not_ready(&self, extra: String) -> TestkitError {
        TestkitError::NotReady {
            binary: format!("{} {extra}", self.spec.binary.display()),
            port: self.spec.port,
            waited_secs: self.spec.ready_timeout.as_secs(),
            log: self.spec.log.clone(),
            tail: tail(&self.spec.log, 20),
        }
    }

    /// The server's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.spec.port
    }

    /// The process id of the server (its process group id too).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    fn group(&self) -> Option<Pid> {
        self.pid().and_then(|p| Pid::from_raw(p as i32))
    }

    /// The server's processes now (see [`process_tree`]), the leader first.
    fn members(&self) -> Vec<i32> {
        self.group()
            .map(|g| process_tree::members(g.as_raw_nonzero().get()))
            .unwrap_or_default()
    }

    /// Sends `signal` to the server's group and to each of `members` (by pid: the
    /// ones that left the group).
    fn signal_all(&self, signal: Signal, members: &[i32]) {
        if let Some(group) = self.group() {
            let _ = kill_process_group(group, signal);
        }
        for pid in members.iter().filter_map(|p| Pid::from_raw(*p)) {
            let _ = kill_process(pid, signal);
        }
    }

    fn signal(&self, signal: Signal) {
        self.signal_all(signal, &self.members());
    }

    /// Freezes every process of the server (SIGSTOP), and returns once the kernel
    /// shows each of them stopped (at most 5 s): `kill` only queues the signal, and
    /// a thread in the middle of a system call (a JVM writing a reply) finishes it
    /// first.
    pub fn pause(&self) {
        let members = self.members();
        self.signal_all(Signal::STOP, &members);
        let until = Instant::now() + Duration::from_secs(5);
        while !process_tree::all_stopped(&members) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Thaws it (SIGCONT).
    pub fn resume(&self) {
        self.signal(Signal::CONT);
    }

    /// Asks the server to stop (SIGTERM to its group), waits up to `patience` for
    /// it to exit, then kills whatever is left. Whether it exited by itself.
    pub(crate) async fn terminate(&mut self, patience: Duration) -> bool {
        self.signal(Signal::TERM);
        let until = Instant::now() + patience;
        let mut exited = false;
        while let Some(child) = self.child.as_mut() {
            exited = matches!(child.try_wait(), Ok(Some(_)));
            if exited || Instant::now() >= until {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.kill();
        exited
    }

    /// Kills every process of the server (SIGKILL) and waits until they are gone.
    pub fn kill(&mut self) {
        // Read before the leader dies: its orphans then belong to init.
        let members = self.members();
        self.signal_all(Signal::CONT, &members);
        self.signal_all(Signal::KILL, &members);
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
        // The others (e.g. postgres backends) are reaped by init; wait until they
        // are gone, bounded.
        let until = Instant::now() + Duration::from_secs(10);
        while !process_tree::all_gone(&members) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Some(pid_file) = &self.shm_pid_file {
            crate::sysv_shm::remove_named_in(pid_file);
        }
    }

    /// Has [`kill`](Self::kill) remove the System V shared memory segment that
    /// `pid_file` names. A killed PostgreSQL leaves its segment behind, and
    /// the kernel's table of them (`kernel.shmmni`, 4096) fills up after as
    /// many killed servers: then no PostgreSQL starts on the machine.
    pub(crate) fn removing_sysv_shm_of(mut self, pid_file: PathBuf) -> Self {
        self.shm_pid_file = Some(pid_file);
        self
    }

    /// Starts the same command again, on the same data dir and port (after
    /// [`kill`](Self::kill), or killing first if it still runs).
    pub(crate) fn respawn(&mut self) -> Result<(), TestkitError> {
        if self.child.is_some() {
            self.kill();
        }
        self.start_process()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.kill();
        }
    }
}

/// How long a setup step (`initdb`, `redis-cli --cluster create`) may take.
const SETUP_LIMIT: Duration = Duration::from_secs(120);

/// Runs a setup command to completion, killing it after [`SETUP_LIMIT`]; its output
/// goes into the error on failure.
pub(crate) fn run_setup(step: &str, cmd: &mut Command) -> Result<(), TestkitError> {
    use std::io::{Read, Seek};
    // Output goes to files, not pipes, so a chatty step cannot block on a full pipe
    // while we wait for it with a time limit.
    let (mut out, mut err) = (tempfile::tempfile()?, tempfile::tempfile()?);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(err.try_clone()?)
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => TestkitError::NotFound {
                binary: step.to_string(),
            },
            _ => TestkitError::Io(e),
        })?;
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if started.elapsed() >= SETUP_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut text = String::new();
    for file in [&mut out, &mut err] {
        file.rewind()?;
        file.read_to_string(&mut text)?;
        text.push('\n');
    }
    match status {
        Some(s) if s.success() => Ok(()),
        Some(_) => Err(TestkitError::Setup {
            step: step.to_string(),
            detail: text,
        }),
        None => Err(TestkitError::Setup {
            step: step.to_string(),
            detail: format!("did not finish within {SETUP_LIMIT:?}; killed\n{text}"),
        }),
    }
}

/// Whether `cmd` exits 0 within 5 s.
pub(crate) async fn probe_command(mut cmd: tokio::process::Command) -> bool {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    matches!(
        tokio::time::timeout(Duration::from_secs(5), cmd.status()).await,
        Ok(Ok(status)) if status.success()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_binary_says_run_ci_setup() {
        let err = find_binary("lockkit-no-such-server", "LOCKKIT_NO_SUCH_OVERRIDE").unwrap_err();
        assert_eq!(
            err.to_string(),
            "lockkit-no-such-server not found — run ci/setup"
        );
    }
}
