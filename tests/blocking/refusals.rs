//! Inside an async runtime every blocking call refuses, and never panics.

use lockkit::blocking;
use lockkit::{LockError, Result};

use super::{locker, wait_for};

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
