//! `lockkit::blocking` from plain threads, on embedded SQLite: exclusion and
//! hand-off between threads, release on drop, renewals while the thread works,
//! and a clear refusal inside an async runtime.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use lockkit::LockError;
use lockkit::blocking::{self, Locker};

fn locker(dir: &tempfile::TempDir) -> Locker {
    blocking::connect(&format!(
        "sqlite://{}",
        dir.path().join("locks.db").display()
    ))
    .unwrap()
}

#[test]
fn threads_exclude_each_other_and_a_dropped_guard_releases_before_drop_returns() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (locker(&dir), locker(&dir));
    let guard = a.lock("orders").unwrap();
    let first = guard.token();
    let (waiting, waited) = mpsc::channel();
    let waiter = thread::spawn(move || {
        assert!(matches!(
            b.try_lock("orders"),
            Err(LockError::Contended { .. })
        ));
        waiting.send(()).unwrap();
        let second = b.lock_within("orders", Duration::from_secs(15)).unwrap();
        second.token()
    });
    waited.recv().unwrap();
    drop(guard); // released when drop returns
    let second = waiter.join().unwrap();
    assert!(second > first, "{second} after {first}");

    // The waiter's guard was dropped at the end of its thread: free again.
    a.try_lock("orders").unwrap().release().unwrap();
}

#[test]
fn the_watchdog_renews_while_the_thread_works() {
    let dir = tempfile::tempdir().unwrap();
    // A short watchdog lease: the first renewal is due after 100 ms.
    let a = locker(&dir).with_ttl(Duration::from_millis(300));
    let guard = a.lock("renewed").unwrap();
    let granted_until = guard.deadline();
    let until = Instant::now() + Duration::from_secs(10);
    while guard.deadline() <= granted_until {
        assert!(Instant::now() < until, "no renewal within 10 s");
        thread::sleep(Duration::from_millis(5));
    }
    assert!(!guard.is_lost());
    guard.extend(Duration::from_secs(60)).unwrap();
    assert!(guard.deadline() > Instant::now() + Duration::from_secs(30));
    guard.release().unwrap();
}

#[test]
fn inside_an_async_runtime_it_refuses_instead_of_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let a = locker(&dir);
    let guard = a.lock("k").unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        match a.try_lock("other") {
            Err(LockError::Config(m)) => assert!(m.contains("async runtime"), "{m}"),
            other => panic!("a blocking call inside a runtime: {other:?}"),
        }
        drop(guard); // released in the background, without a panic
    });
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        match a.try_lock("k") {
            Ok(g) => break g.release().unwrap(),
            Err(LockError::Contended { .. }) if Instant::now() < until => {
                thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("the background release never landed: {e}"),
        }
    }
}
