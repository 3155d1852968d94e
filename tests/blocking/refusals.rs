//! Inside an async runtime every blocking call refuses, and never panics.

use std::time::Duration;

use lockkit::blocking;
use lockkit::{LockError, Result};

use super::{locker, url, wait_for};

/// Fails unless `result` is the refusal to block inside a runtime.
#[track_caller]
fn refused<T: std::fmt::Debug>(result: Result<T>) {
    match result {
        Err(LockError::Config(m)) => assert!(m.contains("async runtime"), "{m}"),
        other => panic!("a blocking call inside a runtime: {other:?}"),
    }
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Whether `key` can be taken now, released at once.
fn free(a: &blocking::Locker, key: &str) -> bool {
    match a.try_lock(key) {
        Ok(guard) => guard.release().is_ok(),
        Err(LockError::Contended { .. }) => false,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn inside_an_async_runtime_it_refuses_instead_of_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let a = locker(&dir);
    let guard = a.lock("k").unwrap();
    current_thread().block_on(async {
        refused(a.try_lock("other"));
        drop(guard); // released in the background, without a panic
    });
    wait_for("the background release", || free(&a, "k"));
}

#[test]
fn every_new_call_refuses_inside_a_runtime_and_drops_release_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let a = locker(&dir);
    let guard = a.lock("held").unwrap();
    let election = a.election("scheduler");
    let leading = election.campaign("node-a").unwrap();
    let mut observer = election.observe();
    let semaphore = a.semaphore("pool", 2);
    let wait = Duration::from_secs(1);
    current_thread().block_on(async {
        refused(blocking::connect(&url(&dir)));
        refused(a.read_lock_within("rw", wait));
        refused(a.write_lock_within("rw", wait));
        refused(a.read_lock_request("rw").no_wait().acquire());
        refused(a.try_permit("pool", 2));
        refused(a.permit("pool", 2, wait));
        refused(semaphore.try_acquire());
        refused(semaphore.available());
        refused(a.inspect("held"));
        refused(election.campaign_within("node-b", wait));
        refused(election.leader());
        refused(observer.changed());
        refused(observer.changed_within(wait));
        refused(a.job("nightly").run(|_| ()));
        refused(guard.wait_lost(wait));
        refused(guard.extend(wait));
        refused(leading.wait_lost(wait));
        refused(leading.proclaim("node-a:2"));
        // Not blocking: a receiver, made here as anywhere.
        let lost = guard.lost();
        drop((guard, leading, lost)); // released in the background
    });
    wait_for("the lock's background release", || free(&a, "held"));
    wait_for("the background resignation", || {
        election.leader().unwrap().is_none()
    });
}

#[test]
fn a_release_or_resignation_inside_a_runtime_refuses_and_still_happens() {
    let dir = tempfile::tempdir().unwrap();
    let a = locker(&dir);
    let guard = a.lock("held").unwrap();
    let leading = a.election("scheduler").campaign("node-a").unwrap();
    current_thread().block_on(async {
        refused(guard.release());
        refused(leading.resign());
    });
    wait_for("the release", || free(&a, "held"));
    wait_for("the resignation", || {
        a.election("scheduler").leader().unwrap().is_none()
    });
}
