//! `lockkit run`: a command run while holding a lock, as a user would run it.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::process::{Command, Output, Stdio};
use std::time::Instant;

fn lockkit_run(url: &str, key: &str, extra: &[&str], script: &str) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_lockkit"))
        .args(["run", "--url", url, "--key", key])
        .args(extra)
        .args(["--", "sh", "-c", script])
        .env_remove("LOCKKIT_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn finished(child: std::process::Child) -> (i32, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().unwrap();
    (
        status.code().unwrap_or(-1),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

/// Nanoseconds since the epoch, as printed by `date +%s%N` (the two processes share
/// the machine's clock).
fn stamps(out: &str) -> (u128, u128, u64) {
    let mut lines = out.lines();
    let token: u64 = lines.next().unwrap().parse().unwrap();
    let start: u128 = lines.next().unwrap().trim().parse().unwrap();
    let end: u128 = lines.next().unwrap().trim().parse().unwrap();
    (start, end, token)
}

/// Two `lockkit run` invocations on the same key, started together, each holding
/// for 300 ms: their critical sections (timestamped by the commands themselves)
/// never overlap, both exit 0, and the second token is greater.
#[test]
fn two_concurrent_runs_on_one_key_never_overlap() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("locks.db").display());
    let script = "echo $LOCKKIT_FENCING_TOKEN; date +%s%N; sleep 0.3; date +%s%N";
    let a = lockkit_run(&url, "deploy", &["--ttl", "2s"], script);
    let b = lockkit_run(&url, "deploy", &["--ttl", "2s"], script);
    let (ca, oa, ea) = finished(a);
    let (cb, ob, eb) = finished(b);
    assert_eq!((ca, cb), (0, 0), "{ea}\n{eb}");
    let (mut first, mut second) = (stamps(&oa), stamps(&ob));
    if second.0 < first.0 {
        std::mem::swap(&mut first, &mut second);
    }
    eprintln!("first {first:?}, second {second:?}");
    assert!(
        first.1 <= second.0,
        "the critical sections overlap: {first:?} and {second:?}"
    );
    assert!(second.2 > first.2, "tokens {} then {}", first.2, second.2);
}

/// The command's exit status is passed through; a lock that cannot be taken within
/// `--wait` exits 4 without running the command.
#[test]
fn exit_status_is_the_commands_and_a_busy_lock_exits_4() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("locks.db").display());
    let (code, _, err) = finished(lockkit_run(&url, "k", &[], "exit 7"));
    assert_eq!(code, 7, "{err}");
    let mut holder = lockkit_run(&url, "k", &["--verbose"], "sleep 1.5");
    // `--verbose` says when it holds the lock.
    let mut stderr = std::io::BufReader::new(holder.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("holding") {
        line.clear();
        assert!(std::io::BufRead::read_line(&mut stderr, &mut line).unwrap() > 0);
    }
    let (code, out, err) = finished(lockkit_run(&url, "k", &["--wait", "100ms"], "echo ran"));
    assert_eq!(code, 4, "{err}");
    assert!(!out.contains("ran"), "the command ran without the lock");
    assert!(err.contains("timed out"), "{err}");
    let (code, _, err) = finished(holder);
    assert_eq!(code, 0, "{err}");
    drop(stderr);
}

/// When the lock is lost while the command runs (here: broken with
/// `force_release`), the command is sent the configured signal at the next
/// renewal and `lockkit run` exits 3.
#[test]
fn a_lost_lock_signals_the_command_and_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("locks.db").display());
    let mut child = lockkit_run(
        &url,
        "lost",
        &["--ttl", "600ms", "--signal", "USR1", "--grace", "2s"],
        "trap 'echo got-usr1; exit 0' USR1; echo started; while true; do sleep 0.05; done",
    );
    // Break the lock only once the command has set its trap and said so.
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
    assert_eq!(first.trim(), "started");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let driver = lockkit::driver::connect(&url).await.unwrap();
        let key = lockkit::LockKey::new("lost").unwrap();
        assert!(
            driver.force_release(&key).await.unwrap(),
            "the lock was not held"
        );
    });
    let broken = Instant::now();
    let mut out = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut out).unwrap();
    let (code, _, err) = finished(child);
    eprintln!("stopped {:?} after the lock was broken", broken.elapsed());
    assert_eq!(code, 3, "{out}\n{err}");
    assert!(
        out.contains("got-usr1"),
        "the command did not get USR1: {out}\n{err}"
    );
    assert!(err.contains("lost"), "{err}");
    assert_eq!(
        err.lines().filter(|l| l.contains(" lost")).count(),
        1,
        "the loss is said more than once:\n{err}"
    );
}

/// Processes starting at once on a new SQLite file race to switch it to WAL and
/// create the table; SQLite refuses the losers at once with SQLITE_BUSY (its busy
/// handler is skipped where waiting could deadlock). Every one must still open it.
#[test]
fn runs_starting_together_on_a_new_sqlite_file_all_open_it() {
    for round in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("new.db").display());
        let runs: Vec<_> = (0..6)
            .map(|_| lockkit_run(&url, "k", &[], "sleep 0.05"))
            .collect();
        for run in runs {
            let (code, _, err) = finished(run);
            assert_eq!(code, 0, "round {round}: {err}");
        }
    }
}
