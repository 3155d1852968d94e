//! Bounded waits in every mode, and permits without waiting.

use std::time::{Duration, Instant};

use lockkit::blocking::LockGuard;
use lockkit::{LockError, LockMode, Result};

use super::locker;

const WAIT: Duration = Duration::from_millis(300);

/// Runs `take`, which should wait [`WAIT`] and time out on `key`.
fn times_out(key: &str, take: impl FnOnce() -> Result<LockGuard>) {
    let started = Instant::now();
    match take() {
        Err(LockError::Timeout { key: k, waited }) => {
            assert_eq!(k, key);
            assert!(waited >= WAIT - Duration::from_millis(20), "{waited:?}");
        }
        other => panic!("a bounded wait on a held `{key}`: {other:?}"),
    }
    let took = started.elapsed();
    // The wait is counted from the request: never short by more than the
    // clock's grain, and not far over on a loaded machine either.
    assert!(
        took >= WAIT - Duration::from_millis(20),
        "gave up after {took:?}"
    );
    assert!(
        took < WAIT + Duration::from_secs(5),
        "gave up after {took:?}"
    );
}

#[test]
fn try_permit_is_refused_at_the_limit_and_granted_after_a_release() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (locker(&dir), locker(&dir));
    let first = a.try_permit("exports", 2).unwrap();
    let second = b.try_permit("exports", 2).unwrap();
    assert_eq!(first.mode(), LockMode::Permit { limit: 2 });
    assert!(second.token() > first.token());
    assert!(matches!(
        a.try_permit("exports", 2),
        Err(LockError::Contended { .. })
    ));
    let semaphore = b.semaphore("exports", 2);
    assert_eq!(semaphore.available().unwrap(), 0);
    assert!(matches!(
        semaphore.try_acquire(),
        Err(LockError::Contended { .. })
    ));

    first.release().unwrap();
    let third = a.try_permit("exports", 2).unwrap();
    assert!(third.token() > second.token());
    drop((second, third));
    assert_eq!(semaphore.available().unwrap(), 2);
}

#[test]
fn a_permit_with_a_bounded_wait_times_out_while_all_are_out_and_is_granted_after() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (locker(&dir), locker(&dir));
    let held = a.permit("pool", 1, WAIT).unwrap();
    times_out("pool", || b.permit("pool", 1, WAIT));
    let semaphore = b.semaphore("pool", 1);
    times_out("pool", || semaphore.acquire_request().wait(WAIT).acquire());
    drop(held);
    b.permit("pool", 1, WAIT).unwrap().release().unwrap();
}

#[test]
fn a_read_lock_within_times_out_while_written_and_succeeds_after() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (locker(&dir), locker(&dir));
    let writing = a.write_lock_within("catalog", WAIT).unwrap();
    assert_eq!(writing.mode(), LockMode::Exclusive);
    times_out("catalog", || b.read_lock_within("catalog", WAIT));
    times_out("catalog", || {
        b.read_lock_request("catalog").wait(WAIT).acquire()
    });
    writing.release().unwrap();

    let reading = b.read_lock_within("catalog", WAIT).unwrap();
    assert_eq!(reading.mode(), LockMode::Shared);
    // Readers share.
    let also = a.read_lock_within("catalog", WAIT).unwrap();
    drop((reading, also));
}

#[test]
fn a_write_lock_within_times_out_while_read_and_succeeds_after() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (locker(&dir), locker(&dir));
    let reading = a.read_lock("catalog").unwrap();
    times_out("catalog", || b.write_lock_within("catalog", WAIT));
    times_out("catalog", || b.lock_within("catalog", WAIT));
    assert!(matches!(
        b.write_lock_request("catalog").no_wait().acquire(),
        Err(LockError::Contended { .. })
    ));
    reading.release().unwrap();

    let writing = b.write_lock_within("catalog", WAIT).unwrap();
    assert_eq!(writing.mode(), LockMode::Exclusive);
    writing.release().unwrap();
}
