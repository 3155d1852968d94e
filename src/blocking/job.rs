//! [`Job`]: a scheduled job that runs on one node of many, the blocking twin of
//! [`crate::Job`]; the job itself runs on the calling thread.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;

use super::{OwnRuntime, outside_a_runtime};
use crate::{FencingToken, JobRun, LockError, Result};

/// A job that runs at most once per schedule across every node sharing the
/// backend, with [`crate::Job`]'s semantics: made by [`super::Locker::job`].
///
/// Each node calls [`run`](Job::run) on its own schedule. The first to take the
/// job's lock runs it; the others get [`JobRun::Skipped`]. The lock is a fixed
/// lease of [`at_most_for`](Job::at_most_for), and a run that finishes early
/// keeps it until [`at_least_for`](Job::at_least_for) after it began.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// # fn main() -> Result<(), lockkit::LockError> {
/// # let dir = tempfile::tempdir().map_err(|e| lockkit::LockError::Config(e.to_string()))?;
/// # let url = format!("sqlite://{}", dir.path().join("locks.db").display());
/// let node_a = lockkit::blocking::connect(&url)?;
/// let node_b = lockkit::blocking::connect(&url)?; // another process, say
/// let job = |node: &lockkit::blocking::Locker| {
///     node.job("nightly-report")
///         .at_most_for(Duration::from_secs(600))
///         .at_least_for(Duration::from_secs(30))
/// };
/// let ran = job(&node_a).run(|token| format!("report, fenced by {token}"))?;
/// assert!(ran.ran());
/// // Finished early: for 30 s after it began, the other node skips.
/// assert!(!job(&node_b).run(|_| ())?.ran());
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a job does nothing until it is run"]
pub struct Job {
    job: crate::Job,
    runtime: Arc<OwnRuntime>,
}

impl Job {
    pub(super) fn new(job: crate::Job, runtime: Arc<OwnRuntime>) -> Self {
        Self { job, runtime }
    }

    /// The job's lease (ShedLock's `lockAtMostFor`; default
    /// [`crate::DEFAULT_JOB_AT_MOST_FOR`]): longer than the job ever runs, since
    /// a run that outlasts it may overlap another's.
    pub fn at_most_for(self, at_most: Duration) -> Self {
        Self {
            job: self.job.at_most_for(at_most),
            ..self
        }
    }

    /// How long after a run begins its lock stays taken, even if it finished
    /// sooner (ShedLock's `lockAtLeastFor`; default 0). At most
    /// [`at_most_for`](Job::at_most_for).
    pub fn at_least_for(self, at_least: Duration) -> Self {
        Self {
            job: self.job.at_least_for(at_least),
            ..self
        }
    }

    /// Runs `job` on this thread, with the hold's fencing token, if no other node
    /// holds the job's lock; [`JobRun::Skipped`] otherwise. The job runs outside
    /// the locker's runtime, so it may itself call the blocking API.
    ///
    /// # Errors
    ///
    /// As [`crate::Job::run`]; [`LockError::Config`] from inside an async
    /// runtime.
    pub fn run<T>(self, job: impl FnOnce(FencingToken) -> T) -> Result<JobRun<T>> {
        outside_a_runtime()?;
        // The async job runs on the runtime; its body hands the token to this
        // thread and waits until the job is done here (or has panicked).
        let (token_tx, token_rx) = oneshot::channel();
        let (done_tx, done_rx) = oneshot::channel::<()>();
        let running = self.runtime.spawn(self.job.run(move |token| async move {
            if token_tx.send(token).is_ok() {
                let _ = done_rx.await;
            }
        }))?;
        // An error: the async job ended without running its body.
        let output = match self.runtime.block_on(token_rx)? {
            Ok(token) => {
                let output = job(token);
                drop(done_tx);
                Some(output)
            }
            Err(_) => None,
        };
        let ran = self
            .runtime
            .block_on(running)?
            .map_err(|e| LockError::Config(format!("BUG: a job's task failed: {e}")))??;
        match (ran, output) {
            (JobRun::Ran { token, .. }, Some(output)) => Ok(JobRun::Ran { output, token }),
            (JobRun::Skipped, None) => Ok(JobRun::Skipped),
            _ => Err(LockError::Config(
                "BUG: a job's lock and its body disagree on whether it ran".to_owned(),
            )),
        }
    }
}
