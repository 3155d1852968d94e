//! `lockkit elect`, run as a service's wrapper would be, against a SQLite file and
//! a real Redis and etcd from the testkit: the command runs only while its
//! candidate leads, with the term in its environment; leadership is handed over
//! when the leader stops, and a lost leadership stops the command (and, with
//! `--restart`, campaigns again).

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};

/// How long a state the test waits for may take to appear.
const WITHIN: Duration = Duration::from_secs(20);

/// A running `lockkit elect`, killed if the test fails before it exits.
struct Candidate(Child);

impl Drop for Candidate {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

impl Candidate {
    /// `lockkit elect URL NAME --value VALUE EXTRA -- sh -c SCRIPT`.
    fn start(url: &str, value: &str, extra: &[&str], script: &str) -> Self {
        let child = Command::new(env!("CARGO_BIN_EXE_lockkit"))
            .args(["elect", url, "scheduler", "--value", value, "--ttl", "5s"])
            .args(extra)
            .args(["--", "sh", "-c", script])
            .env_remove("LOCKKIT_URL")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Self(child)
    }

    fn signal(&self, signal: Signal) {
        let pid = Pid::from_raw(self.0.id() as i32).unwrap();
        kill_process(pid, signal).unwrap();
    }

    /// Its exit status, within [`WITHIN`].
    fn exited(&mut self) -> ExitStatus {
        let start = Instant::now();
        while start.elapsed() < WITHIN {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("lockkit elect did not exit within {WITHIN:?}");
    }
}

/// The terms written to `file`, one a line, once there are at least `n`.
fn terms(file: &Path, n: usize) -> Vec<u64> {
    let start = Instant::now();
    while start.elapsed() < WITHIN {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let lines: Vec<u64> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
        if lines.len() >= n {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{} never had {n} terms", file.display());
}

/// A leads and runs its command with its term; `leader()` and `inspect` show
/// A's value and term; B waits until A is stopped with TERM (A's command gets
/// it, A resigns and exits as its command did), then leads with a greater term.
async fn the_command_runs_only_while_leading(url: &str, dir: &Path) {
    let (a_file, b_file) = (dir.join("a.terms"), dir.join("b.terms"));
    let script = |f: &PathBuf| format!("echo $LOCKKIT_TERM >> {}; exec sleep 60", f.display());
    let mut a = Candidate::start(url, "node-a", &[], &script(&a_file));
    let a_term = terms(&a_file, 1)[0];
    let locker = lockkit::connect(url).await.unwrap();
    let election = locker.election("scheduler");
    let leader = election.leader().await.unwrap().expect("A leads");
    assert_eq!(
        (leader.term.get(), leader.value.as_deref()),
        (a_term, Some("node-a"))
    );

    let mut b = Candidate::start(url, "node-b", &[], &script(&b_file));
    // B campaigns while A leads: B's command has not run by the time A's lease
    // was renewed twice (ttl 5 s: every 1.7 s).
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(!b_file.exists(), "B's command ran while A led");
    assert_eq!(
        election.leader().await.unwrap().map(|l| l.term.get()),
        Some(a_term)
    );

    a.signal(Signal::TERM);
    let status = a.exited();
    assert_eq!(
        status.code(),
        Some(128 + 15),
        "A exits as its command did (TERM)"
    );
    let b_term = terms(&b_file, 1)[0];
    assert!(
        b_term > a_term,
        "B's term {b_term} is not above A's {a_term}"
    );
    let leader = election.leader().await.unwrap().expect("B leads");
    assert_eq!(leader.value.as_deref(), Some("node-b"));
    b.signal(Signal::TERM);
    b.exited();
    assert!(
        election.leader().await.unwrap().is_none(),
        "B did not resign"
    );
}

/// A leader killed outright (SIGKILL) takes its command with it, and what that
/// command started: nothing of it runs once the next candidate leads.
async fn a_killed_leader_leaves_nothing_running(url: &str, dir: &Path) {
    let (pid_file, b_file) = (dir.join("grandchild.pid"), dir.join("b-killed.terms"));
    let background = format!(
        "sh -c 'echo $$ > {}; exec sleep 60' & wait",
        pid_file.display()
    );
    let a = Candidate::start(url, "node-a", &[], &background);
    let start = Instant::now();
    let pid = loop {
        let text = std::fs::read_to_string(&pid_file).unwrap_or_default();
        if let Some(pid) = text.trim().parse().ok().and_then(Pid::from_raw) {
            break pid;
        }
        assert!(start.elapsed() < WITHIN, "A's command never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    a.signal(Signal::KILL);
    let script = format!("echo $LOCKKIT_TERM >> {}; exec sleep 60", b_file.display());
    let mut b = Candidate::start(url, "node-b", &[], &script);
    terms(&b_file, 1);
    assert!(
        rustix::process::test_kill_process(pid).is_err(),
        "the killed leader's background process (pid {pid:?}) still runs while B leads"
    );
    b.signal(Signal::TERM);
    b.exited();
}

/// `lockkit break` takes leadership away: the command is stopped; with
/// `--restart` the candidate campaigns again and runs it with a new term;
/// without it, lockkit exits 3.
async fn lost_leadership_stops_the_command(url: &str, dir: &Path) {
    let file = dir.join("restart.terms");
    let script = format!("echo $LOCKKIT_TERM >> {}; exec sleep 60", file.display());
    let mut again = Candidate::start(url, "node-r", &["--restart"], &script);
    let first = terms(&file, 1)[0];
    let locker = lockkit::connect(url).await.unwrap();
    locker
        .driver()
        .force_release(&lockkit::LockKey::new("scheduler").unwrap())
        .await
        .unwrap();
    let second = terms(&file, 2)[1];
    assert!(second > first, "the new term {second} is not above {first}");
    again.signal(Signal::TERM);
    again.exited();

    let once = dir.join("once.terms");
    let script = format!("echo $LOCKKIT_TERM >> {}; exec sleep 60", once.display());
    let mut single = Candidate::start(url, "node-s", &[], &script);
    terms(&once, 1);
    locker
        .driver()
        .force_release(&lockkit::LockKey::new("scheduler").unwrap())
        .await
        .unwrap();
    assert_eq!(single.exited().code(), Some(3), "lost leadership exits 3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elect_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("l.db").display());
    the_command_runs_only_while_leading(&url, dir.path()).await;
    lost_leadership_stops_the_command(&url, dir.path()).await;
    a_killed_leader_leaves_nothing_running(&url, dir.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elect_on_redis() {
    let dir = tempfile::tempdir().unwrap();
    let server = lockkit_testkit::Redis::start().await.unwrap();
    the_command_runs_only_while_leading(&server.url(), dir.path()).await;
    lost_leadership_stops_the_command(&server.url(), dir.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elect_on_etcd() {
    let dir = tempfile::tempdir().unwrap();
    let server = lockkit_testkit::Etcd::start().await.unwrap();
    the_command_runs_only_while_leading(&server.url(), dir.path()).await;
    lost_leadership_stops_the_command(&server.url(), dir.path()).await;
}
