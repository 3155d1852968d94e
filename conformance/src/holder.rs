//! The holder child process of the killed-holder case.
//!
//! The parent starts a child (a re-run of the test binary, or `lockkit hold`) with
//! `LOCKKIT_HOLDER_URL`, `LOCKKIT_HOLDER_KEY` and `LOCKKIT_HOLDER_TTL_MS` set. The
//! child connects, takes the lock with the watchdog, prints
//! `LOCKKIT-HOLDER ACQUIRED <token> <effective TTL in ms>` on stdout and waits (at
//! most a minute) to be
//! killed. If it learns that the lock was lost first (for instance after being
//! stopped with SIGSTOP past its lease and resumed), it prints
//! `LOCKKIT-HOLDER LOST <reason>` and exits.
//!
//! # Examples
//!
//! The parent's side, with a stand-in child that prints what a real holder prints
//! once it has the lock (a real one runs [`child_main`]):
//!
//! ```
//! use std::process::Command;
//! use std::time::Duration;
//! use lockkit_conformance::holder::{ACQUIRED, HolderProcess};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), String> {
//! let mut child = Command::new("sh");
//! child.arg("-c").arg(format!("echo '{ACQUIRED} 7 2000'; exec sleep 60"));
//! let ttl = Duration::from_secs(1);
//! let (holder, token) = HolderProcess::start(child, "mem://", "jobs/nightly", ttl).await?;
//! assert_eq!(token, 7);
//! assert_eq!(holder.effective_ttl(), Duration::from_secs(2)); // the backend raised it
//! holder.stop()?; // frozen, as in a long GC pause
//! holder.resume()?;
//! holder.kill().await;
//! # Ok(()) }
//! ```

use std::future::Future;
use std::io::Write;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use lockkit_core::{LockDriver, LockError, Locker};
use rustix::process::{Pid, Signal, kill_process};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};

/// The URL the child connects to.
pub const ENV_URL: &str = "LOCKKIT_HOLDER_URL";
/// The key the child locks.
pub const ENV_KEY: &str = "LOCKKIT_HOLDER_KEY";
/// The watchdog TTL the child uses, in milliseconds.
pub const ENV_TTL_MS: &str = "LOCKKIT_HOLDER_TTL_MS";
/// When set, the child takes a permit of a semaphore of this many permits
/// instead of the lock.
pub const ENV_LIMIT: &str = "LOCKKIT_HOLDER_LIMIT";
/// When set, the child holds a fixed lease of the TTL instead of renewing it
/// with the watchdog: it writes nothing to the backend after its grant.
pub const ENV_FIXED: &str = "LOCKKIT_HOLDER_FIXED";
/// What the child prints once it holds the lock, followed by the token and the
/// lease the backend applies, in milliseconds ([`lockkit_core::LockGuard::effective_ttl`]).
pub const ACQUIRED: &str = "LOCKKIT-HOLDER ACQUIRED";

/// What the child prints when its lock is lost, followed by the reason.
pub const LOST: &str = "LOCKKIT-HOLDER LOST";

/// How long a child waits to be killed before it exits on its own.
pub const CHILD_LIFETIME: Duration = Duration::from_secs(60);

/// How long [`HolderProcess::start`] waits for the child to take the lock.
pub const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// A holder child process, seen from the parent: started, holding, and the lines
/// it prints. Dropping it kills the child.
#[derive(Debug)]
pub struct HolderProcess {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    effective_ttl: Duration,
}

impl HolderProcess {
    /// Starts `command` as a holder of `key` at `url` with the watchdog TTL `ttl`,
    /// and waits (at most [`ACQUIRE_TIMEOUT`]) until it holds the lock. Returns the
    /// process and its fencing token, or what went wrong. The command's stderr is
    /// left as the caller set it.
    pub async fn start(
        command: std::process::Command,
        url: &str,
        key: &str,
        ttl: Duration,
    ) -> Result<(Self, u64), String> {
        Self::start_with(command, url, key, ttl, None, false).await
    }

    /// As [`HolderProcess::start`], but the child holds a fixed `lease` with no
    /// watchdog, so it sends nothing after its grant: a child frozen with
    /// [`stop`](Self::stop) is never frozen in the middle of a renewal (which, on
    /// SQLite, would keep the database's write lock until it is thawed).
    ///
    /// # Errors
    ///
    /// As [`HolderProcess::start`].
    pub async fn start_fixed(
        command: std::process::Command,
        url: &str,
        key: &str,
        lease: Duration,
    ) -> Result<(Self, u64), String> {
        Self::start_with(command, url, key, lease, None, true).await
    }

    /// As [`HolderProcess::start`], but the child holds one permit of the
    /// semaphore of `limit` permits on `key`.
    ///
    /// # Errors
    ///
    /// As [`HolderProcess::start`].
    pub async fn start_permit(
        command: std::process::Command,
        url: &str,
        key: &str,
        ttl: Duration,
        limit: u32,
    ) -> Result<(Self, u64), String> {
        Self::start_with(command, url, key, ttl, Some(limit), false).await
    }

    /// As [`HolderProcess::start_permit`], but with a fixed `lease` and no
    /// watchdog, as [`HolderProcess::start_fixed`].
    ///
    /// # Errors
    ///
    /// As [`HolderProcess::start`].
    pub async fn start_permit_fixed(
        command: std::process::Command,
        url: &str,
        key: &str,
        lease: Duration,
        limit: u32,
    ) -> Result<(Self, u64), String> {
        Self::start_with(command, url, key, lease, Some(limit), true).await
    }

    async fn start_with(
        command: std::process::Command,
        url: &str,
        key: &str,
        ttl: Duration,
        limit: Option<u32>,
        fixed: bool,
    ) -> Result<(Self, u64), String> {
        let mut cmd = tokio::process::Command::from(command);
        if let Some(limit) = limit {
            cmd.env(ENV_LIMIT, limit.to_string());
        }
        if fixed {
            cmd.env(ENV_FIXED, "1");
        }
        cmd.env(ENV_URL, url)
            .env(ENV_KEY, key)
            .env(ENV_TTL_MS, ttl.as_millis().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("could not start the holder process: {e}"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or("the holder's stdout was not captured")?;
        let mut process = Self {
            child,
            lines: BufReader::new(stdout).lines(),
            effective_ttl: ttl,
        };
        let rest = match tokio::time::timeout(ACQUIRE_TIMEOUT, process.line(ACQUIRED)).await {
            Ok(Some(rest)) => rest,
            Ok(None) => return Err("the holder process exited without taking the lock".into()),
            Err(_) => return Err("the holder process did not take the lock within 30 s".into()),
        };
        let mut fields = rest.split_whitespace();
        let token = fields
            .next()
            .and_then(|t| t.parse::<u64>().ok())
            .ok_or_else(|| format!("the holder printed a token that is not a number: {rest}"))?;
        if let Some(ms) = fields.next().and_then(|t| t.parse::<u64>().ok()) {
            process.effective_ttl = Duration::from_millis(ms);
        }
        Ok((process, token))
    }

    /// The rest of the next line that contains `marker` (a test harness may print its
    /// own prefix on the same line); `None` once the child's output ends.
    pub async fn line(&mut self, marker: &str) -> Option<String> {
        while let Ok(Some(line)) = self.lines.next_line().await {
            if let Some(at) = line.find(marker) {
                return Some(line[at + marker.len()..].to_owned());
            }
        }
        None
    }

    /// The lease the backend applies to the child's hold: the TTL it was started
    /// with, unless the backend raised it (etcd: at least 1.5 × its election
    /// timeout). A killed child's lock is free this long after its last renewal.
    pub fn effective_ttl(&self) -> Duration {
        self.effective_ttl
    }

    /// The child's process id, while it runs.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Freezes the child with SIGSTOP: its watchdog stops renewing, as in a long GC
    /// pause.
    ///
    /// # Errors
    ///
    /// What went wrong, if the child has exited or cannot be signalled.
    pub fn stop(&self) -> Result<(), String> {
        self.signal(Signal::STOP)
    }

    /// Thaws a child frozen by [`HolderProcess::stop`] (SIGCONT).
    ///
    /// # Errors
    ///
    /// As [`HolderProcess::stop`].
    pub fn resume(&self) -> Result<(), String> {
        self.signal(Signal::CONT)
    }

    fn signal(&self, signal: Signal) -> Result<(), String> {
        let pid = self
            .id()
            .and_then(|id| Pid::from_raw(id.try_into().ok()?))
            .ok_or("the holder process has exited")?;
        kill_process(pid, signal).map_err(|e| format!("could not signal the holder: {e}"))
    }

    /// Kills the child with SIGKILL (which also ends a stopped process) and reaps it.
    pub async fn kill(mut self) {
        let _ = self.child.kill().await;
    }
}

/// The child's body. Returns at once when the environment is not set (so the entry
/// test is harmless when run by hand).
pub async fn child_main<F, Fut>(connect: F)
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = Result<Arc<dyn LockDriver>, LockError>>,
{
    let (Ok(url), Ok(key), Ok(ttl)) = (
        std::env::var(ENV_URL),
        std::env::var(ENV_KEY),
        std::env::var(ENV_TTL_MS),
    ) else {
        return;
    };
    let Ok(ttl) = ttl.parse::<u64>().map(Duration::from_millis) else {
        let _ = writeln!(std::io::stderr(), "holder: {ENV_TTL_MS} is not a number");
        std::process::exit(2);
    };
    let limit = match std::env::var(ENV_LIMIT).ok().map(|l| l.parse::<u32>()) {
        None => None,
        Some(Ok(limit)) => Some(limit),
        Some(Err(_)) => {
            let _ = writeln!(std::io::stderr(), "holder: {ENV_LIMIT} is not a number");
            std::process::exit(2);
        }
    };
    let result = async {
        let locker = Locker::new(connect(url).await?);
        let semaphore = limit.map(|limit| locker.semaphore(key.clone(), limit));
        let request = match &semaphore {
            Some(semaphore) => semaphore.acquire(),
            None => locker.lock(key),
        };
        let request = if std::env::var_os(ENV_FIXED).is_some() {
            request.lease(ttl)
        } else {
            request.ttl(ttl)
        };
        let guard = request.wait(Duration::from_secs(30)).await?;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "\n{ACQUIRED} {} {}",
            guard.token(),
            guard.effective_ttl().as_millis()
        );
        let _ = out.flush();
        drop(out);
        tokio::select! {
            () = tokio::time::sleep(CHILD_LIFETIME) => guard.release().await,
            reason = guard.lost() => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "\n{LOST} {reason}");
                let _ = out.flush();
                Ok(())
            }
        }
    }
    .await;
    if let Err(e) = result {
        let _ = writeln!(std::io::stderr(), "holder: {e}");
        std::process::exit(1);
    }
}
