//! Jobs: one node of two runs each, on the calling thread.

use std::cell::Cell;
use std::thread;
use std::time::{Duration, Instant};

use lockkit::{JobRun, LockError};

use super::{locker, wait_for};

#[test]
fn a_job_runs_on_one_node_while_the_other_skips_and_again_once_it_finished() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (locker(&dir), locker(&dir));
    let caller = thread::current().id();
    // Not `Send`: the job runs here, on the calling thread.
    let runs = Cell::new(0);
    let ran = a
        .job("nightly-report")
        .run(|token| {
            runs.set(runs.get() + 1);
            assert_eq!(thread::current().id(), caller);
            // Outside the runtime: the blocking API works in the job.
            let elsewhere = b.job("nightly-report").run(|_| runs.set(runs.get() + 1));
            assert_eq!(elsewhere.unwrap(), JobRun::Skipped);
            format!("fenced by {token}")
        })
        .unwrap();
    let JobRun::Ran { output, token } = ran else {
        panic!("the free job was skipped: {ran:?}");
    };
    assert_eq!(output, format!("fenced by {token}"));
    assert_eq!(runs.get(), 1);

    // Finished, with no `at_least_for`: the lock is free for the next run.
    let next = b.job("nightly-report").run(|t| t).unwrap();
    match next {
        JobRun::Ran { output, token: t } => assert!(output == t && t > token),
        JobRun::Skipped => panic!("a finished job still skips"),
    }
}

#[test]
fn at_least_for_keeps_the_job_taken_after_an_early_finish() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (locker(&dir), locker(&dir));
    let at_least = Duration::from_millis(600);
    let began = Instant::now();
    let ran = a.job("compact").at_least_for(at_least).run(|_| ()).unwrap();
    assert!(ran.ran());
    assert_eq!(b.job("compact").run(|_| ()).unwrap(), JobRun::Skipped);
    wait_for("the job's next run", || {
        b.job("compact").run(|_| ()).unwrap().ran()
    });
    // Freed at the end of `at_least_for`, give or take the clocks' grain.
    let after = began.elapsed();
    assert!(after >= at_least - Duration::from_millis(50), "{after:?}");

    let refused = a
        .job("compact")
        .at_most_for(Duration::from_secs(1))
        .at_least_for(Duration::from_secs(2))
        .run(|_| ());
    assert!(matches!(refused, Err(LockError::Config(_))), "{refused:?}");
}
