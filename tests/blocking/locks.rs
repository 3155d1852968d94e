//! Locks between threads: exclusion, hand-off, release on drop, renewals.

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use lockkit::LockError;

use super::{locker, wait_for};

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
    wait_for("a renewal", || guard.deadline() > granted_until);
    assert!(!guard.is_lost());
    guard.extend(Duration::from_secs(60)).unwrap();
    assert!(guard.deadline() > Instant::now() + Duration::from_secs(30));
    guard.release().unwrap();
}

#[test]
fn a_request_with_the_holders_owner_reenters_with_the_same_token() {
    let dir = tempfile::tempdir().unwrap();
    let a = locker(&dir);
    let guard = a
        .lock_request("reentered")
        .lease(Duration::from_secs(20))
        .acquire()
        .unwrap();
    let again = a
        .lock_request("reentered")
        .owner(guard.owner().clone())
        .no_wait()
        .acquire()
        .unwrap();
    assert_eq!(again.token(), guard.token());
    // A fixed lease: the deadline is within 20 s of the grant.
    assert!(guard.deadline() <= Instant::now() + Duration::from_secs(20));
    again.release().unwrap();
    guard.release().unwrap();
}
