//! `lockkit run` signalled as systemd, `docker stop`, Kubernetes and CI stop it
//! (TERM, INT, HUP), or killed outright (KILL): the command never keeps writing
//! while another `lockkit run` holds the lock.
//!
//! Each test runs a writer under `lockkit run` that appends `A <token>` to a log
//! every 20 ms and writes its pid to a file, signals lockkit, and then starts a
//! second run that appends `B <token>`. The log must show no `A` line after the
//! first `B` line, and the first command must be gone.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process, test_kill_process};

/// A SQLite lock file, a log both commands append to, and the first command's pid
/// file, in a temp dir.
struct Scene {
    dir: tempfile::TempDir,
    url: String,
    log: PathBuf,
    pidfile: PathBuf,
}

impl Drop for Scene {
    /// A command that outlived its lockkit (the bug these tests catch) must not
    /// outlive the test too.
    fn drop(&mut self) {
        if let Some(pid) = self.writer_pid() {
            let _ = kill_process(pid, Signal::KILL);
        }
    }
}

impl Scene {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("locks.db").display());
        let log = dir.path().join("writes.log");
        let pidfile = dir.path().join("a.pid");
        Self {
            dir,
            url,
            log,
            pidfile,
        }
    }

    /// `lockkit run` of `script` under `sh -c`, on key `k`. Its stderr goes to a
    /// file (a pipe would stay open as long as an orphaned command lives).
    fn run(&self, extra: &[&str], script: &str) -> Run {
        static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let stderr = self.dir.path().join(format!("stderr-{n}.log"));
        let child = Command::new(env!("CARGO_BIN_EXE_lockkit"))
            .args(["run", "--url", &self.url, "--key", "k"])
            .args(extra)
            .args(["--", "sh", "-c", script])
            .env_remove("LOCKKIT_URL")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        Run { child, stderr }
    }

    /// The first command: writes its pid, then `A <token>` every 20 ms, forever.
    fn writer_script(&self) -> String {
        format!(
            "echo $$ > {pid}; while true; do echo \"A $LOCKKIT_FENCING_TOKEN\" >> {log}; sleep 0.02; done",
            pid = self.pidfile.display(),
            log = self.log.display()
        )
    }

    /// The first run, of [`Scene::writer_script`].
    fn start_writer(&self, ttl: &str) -> Run {
        let child = self.run(&["--ttl", ttl, "--grace", "2s"], &self.writer_script());
        wait_for("the first command to write", || {
            read(&self.log).contains("A ") && self.writer_pid().is_some()
        });
        child
    }

    /// The second run: one `B <token>` line, and a short hold.
    fn start_second(&self) -> Run {
        let script = format!(
            "echo \"B $LOCKKIT_FENCING_TOKEN\" >> {log}; sleep 0.3",
            log = self.log.display()
        );
        self.run(&["--ttl", "3s", "--wait", "20s"], &script)
    }

    fn writer_pid(&self) -> Option<Pid> {
        let text = read(&self.pidfile);
        Pid::from_raw(text.trim().parse().ok()?)
    }

    /// Checks the log and the first command once the second run is done.
    fn assert_no_write_after_the_second_holder(&self) {
        let log = read(&self.log);
        let lines: Vec<&str> = log.lines().collect();
        let first_b = lines
            .iter()
            .position(|l| l.starts_with("B "))
            .unwrap_or_else(|| panic!("the second run never wrote:\n{log}"));
        let late: Vec<&&str> = lines[first_b..]
            .iter()
            .filter(|l| l.starts_with("A "))
            .collect();
        assert!(
            late.is_empty(),
            "the first command wrote {} time(s) while the second run held the lock \
             (first late write: {:?})",
            late.len(),
            late[0]
        );
        // Killed, it may stay a zombie until init reaps it (its parent, the
        // supervisor, was killed with it): wait for it to be gone.
        let pid = self.writer_pid().unwrap();
        wait_for("the first command to be gone", || {
            test_kill_process(pid).is_err()
        });
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Polls `done` every 10 ms for at most 20 s.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// One `lockkit run` process, and the file its stderr goes to.
struct Run {
    child: Child,
    stderr: PathBuf,
}

/// Waits (at most 30 s) for `run` to exit; its status code (or 128 + the signal
/// that ended it) and its stderr.
fn exit_of(mut run: Run) -> (i32, String) {
    use std::os::unix::process::ExitStatusExt;
    let until = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = run.child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= until {
            let _ = run.child.kill();
            panic!("lockkit run did not exit within 30 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let code = status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    (code, read(&run.stderr))
}

fn signal(run: &Run, signal: Signal) {
    kill_process(Pid::from_child(&run.child), signal).unwrap();
}

/// lockkit is stopped with `sig`: it forwards it to the command, waits for the
/// command to exit, releases the lock, and exits as the command did (128 + the
/// signal: `sh` dies of it). The second run then gets the lock at once, well
/// before the first run's 3 s lease could have run out.
fn forwarded_signal_stops_the_command_before_the_lock_is_released(sig: Signal, code: i32) {
    let scene = Scene::new();
    let first = scene.start_writer("3s");
    let signalled = Instant::now();
    signal(&first, sig);
    let second = scene.start_second();
    let (first_code, first_err) = exit_of(first);
    let (second_code, second_err) = exit_of(second);
    let took = signalled.elapsed();
    assert_eq!(first_code, code, "first run: {first_err}");
    assert_eq!(second_code, 0, "second run: {second_err}");
    scene.assert_no_write_after_the_second_holder();
    assert!(
        took < Duration::from_secs(3),
        "the second run finished {took:?} after the signal: the lock was not released, \
         it ran out"
    );
}

#[test]
fn term_is_forwarded_and_the_command_stops_before_the_lock_is_released() {
    forwarded_signal_stops_the_command_before_the_lock_is_released(Signal::TERM, 143);
}

#[test]
fn int_is_forwarded_and_the_command_stops_before_the_lock_is_released() {
    forwarded_signal_stops_the_command_before_the_lock_is_released(Signal::INT, 130);
}

#[test]
fn hup_is_forwarded_and_the_command_stops_before_the_lock_is_released() {
    forwarded_signal_stops_the_command_before_the_lock_is_released(Signal::HUP, 129);
}

/// KILL cannot be caught: the command dies with lockkit (the parent-death signal),
/// and the second run gets the lock when the first one's 1 s lease runs out.
#[test]
fn kill_takes_the_command_with_it() {
    let scene = Scene::new();
    let first = scene.start_writer("1s");
    signal(&first, Signal::KILL);
    let (first_code, _) = exit_of(first);
    assert_eq!(first_code, 137);
    let pid = scene.writer_pid().unwrap();
    wait_for("the command to die with lockkit", || {
        test_kill_process(pid).is_err()
    });
    let (second_code, second_err) = exit_of(scene.start_second());
    assert_eq!(second_code, 0, "second run: {second_err}");
    scene.assert_no_write_after_the_second_holder();
}

/// KILL takes with it what the command started too: a shell's background
/// writer, which the parent-death signal of the command alone would leave running
/// (orphaned) while the next run holds the lock.
#[test]
fn kill_takes_what_the_command_started_with_it() {
    let scene = Scene::new();
    let writer = scene.writer_script();
    let first = scene.run(
        &["--ttl", "1s", "--grace", "2s"],
        &format!("sh -c '{writer}' & wait"),
    );
    wait_for("the background writer to write", || {
        read(&scene.log).contains("A ") && scene.writer_pid().is_some()
    });
    signal(&first, Signal::KILL);
    let (first_code, _) = exit_of(first);
    assert_eq!(first_code, 137);
    let pid = scene.writer_pid().unwrap();
    wait_for("the background writer to die with lockkit", || {
        test_kill_process(pid).is_err()
    });
    let (second_code, second_err) = exit_of(scene.start_second());
    assert_eq!(second_code, 0, "second run: {second_err}");
    scene.assert_no_write_after_the_second_holder();
}

/// A command that exits leaving a background process behind: that process is
/// killed before the lock is released, so it never writes under the next holder.
#[test]
fn what_a_command_leaves_running_is_killed_before_the_release() {
    let scene = Scene::new();
    let writer = scene.writer_script();
    let first = scene.run(&["--ttl", "3s"], &format!("sh -c '{writer}' & sleep 0.5"));
    let (first_code, first_err) = exit_of(first);
    assert_eq!(first_code, 0, "first run: {first_err}");
    let pid = scene.writer_pid().unwrap();
    wait_for("the background writer to be gone", || {
        test_kill_process(pid).is_err()
    });
    let (second_code, second_err) = exit_of(scene.start_second());
    assert_eq!(second_code, 0, "second run: {second_err}");
    scene.assert_no_write_after_the_second_holder();
}

/// A command that ignores the forwarded signal is killed after `--grace`, and only
/// then is the lock released.
#[test]
fn a_command_that_ignores_the_signal_is_killed_after_the_grace() {
    let scene = Scene::new();
    let script = format!(
        "trap '' TERM; echo $$ > {pid}; while true; do echo \"A $LOCKKIT_FENCING_TOKEN\" >> {log}; sleep 0.02; done",
        pid = scene.pidfile.display(),
        log = scene.log.display()
    );
    let first = scene.run(&["--ttl", "30s", "--grace", "500ms"], &script);
    wait_for("the first command to write", || {
        read(&scene.log).contains("A ") && scene.writer_pid().is_some()
    });
    let signalled = Instant::now();
    signal(&first, Signal::TERM);
    let (code, err) = exit_of(first);
    let took = signalled.elapsed();
    assert_eq!(code, 137, "{err}");
    assert!(
        took >= Duration::from_millis(500),
        "killed after {took:?}, before the grace"
    );
    let (second_code, second_err) = exit_of(scene.start_second());
    assert_eq!(second_code, 0, "{second_err}");
    scene.assert_no_write_after_the_second_holder();
}

/// A run still waiting for the lock when it is signalled exits 128 + the signal
/// without running its command, and leaves nothing behind.
#[test]
fn a_run_signalled_while_waiting_exits_without_running_its_command() {
    let scene = Scene::new();
    let holder = scene.start_writer("30s");
    let marker = scene.log.with_extension("ran");
    let waiting = scene.run(
        &["--wait", "60s", "--verbose"],
        &format!("touch {}", marker.display()),
    );
    // `--verbose` says when it starts waiting.
    wait_for("the second run to say it waits", || {
        read(&waiting.stderr).contains("waiting")
    });
    let signalled = Instant::now();
    signal(&waiting, Signal::TERM);
    let (code, err) = exit_of(waiting);
    assert_eq!(code, 143, "{err}");
    assert!(signalled.elapsed() < Duration::from_secs(5));
    assert!(!marker.exists(), "the command ran without the lock");
    signal(&holder, Signal::TERM);
    let (code, err) = exit_of(holder);
    assert_eq!(code, 143, "{err}");
}

/// A command that cannot be started exits 127, as a shell does, and the lock is
/// released at once.
#[test]
fn a_command_that_cannot_be_started_exits_127_and_releases() {
    let scene = Scene::new();
    let stderr = scene.dir.path().join("stderr-127.log");
    let child = Command::new(env!("CARGO_BIN_EXE_lockkit"))
        .args(["run", "--url", &scene.url, "--key", "k", "--ttl", "30s"])
        .args(["--", "/nonexistent/lockkit-test-command"])
        .env_remove("LOCKKIT_URL")
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let child = Run { child, stderr };
    let (code, err) = exit_of(child);
    assert_eq!(code, 127, "{err}");
    assert!(err.contains("/nonexistent/lockkit-test-command"), "{err}");
    let started = Instant::now();
    let (code, err) = exit_of(scene.run(&["--wait", "10s"], "true"));
    assert_eq!(code, 0, "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the lock was kept"
    );
}
