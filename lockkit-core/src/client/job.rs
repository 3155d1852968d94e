//! [`Job`]: a scheduled job that runs on one node of many, with ShedLock's
//! semantics — `at_most_for` is the lease, `at_least_for` keeps the lock after an
//! early finish — written once on the lock contract.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use super::guard::LockGuard;
use super::locker::Locker;
use crate::error::{LockError, Result};
use crate::types::{FencingToken, MIN_TTL, OwnerId};

/// How long a job's lock lasts at most when [`Job::at_most_for`] is not given.
pub const DEFAULT_JOB_AT_MOST_FOR: Duration = Duration::from_secs(60);

/// What one scheduled run did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum JobRun<T> {
    /// This node ran the job: its output, and the fencing token it ran under.
    Ran {
        /// What the job returned.
        output: T,
        /// The token of the job's hold: fence the job's writes with it.
        token: FencingToken,
    },
    /// Another node holds the job's lock: it runs the job now, or ran it less
    /// than its `at_least_for` ago. Not an error.
    Skipped,
}

impl<T> JobRun<T> {
    /// Whether this node ran the job.
    pub fn ran(&self) -> bool {
        matches!(self, Self::Ran { .. })
    }
}

/// A job that runs at most once per schedule across every node sharing the
/// backend: [`Locker::job`].
///
/// Each node calls [`run`](Job::run) on its own schedule. The first to take the
/// job's lock runs it; the others skip. The lock is a fixed lease of
/// [`at_most_for`](Job::at_most_for): a node that dies mid-run frees the job
/// after it, and a run longer than it may overlap the next node's. A run that
/// finishes early keeps the lock until [`at_least_for`](Job::at_least_for) after
/// it began, so a node whose clock or schedule is slightly off skips instead of
/// running the job again:
///
/// - on a backend whose holds expire ([`crate::Capabilities::lease_expiry`]), the
///   lease is cut to end then, and it holds even if this process exits;
/// - on a session-bound one (ZooKeeper, Consul, the SQL session modes), a
///   background task releases it then; if the process exits first, the lock is
///   freed with its session.
#[derive(Debug)]
#[must_use = "a job does nothing until it is run"]
pub struct Job {
    locker: Locker,
    name: String,
    at_most: Duration,
    at_least: Duration,
}

impl Locker {
    /// A scheduled job named `name` (its lock's key).
    ///
    /// # Examples
    ///
    /// ```
    /// # use std::{sync::Arc, time::Duration};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), lockkit::LockError> {
    /// let node_a = lockkit::Locker::new(Arc::new(lockkit::mem::MemDriver::new()));
    /// let node_b = node_a.clone(); // another node, on the same backend
    /// let job = |node: &lockkit::Locker| {
    ///     node.job("nightly-report")
    ///         .at_most_for(Duration::from_secs(600))
    ///         .at_least_for(Duration::from_secs(30))
    /// };
    /// let ran = job(&node_a).run(|token| async move { format!("report, fenced by {token}") }).await?;
    /// assert!(ran.ran());
    /// // Finished early: for 30 s after it began, the other node skips.
    /// let skipped = job(&node_b).run(|_| async {}).await?;
    /// assert!(!skipped.ran());
    /// # Ok(()) }
    /// ```
    pub fn job(&self, name: impl Into<String>) -> Job {
        Job {
            locker: self.clone(),
            name: name.into(),
            at_most: DEFAULT_JOB_AT_MOST_FOR,
            at_least: Duration::ZERO,
        }
    }
}

impl Job {
    /// The job's lease (ShedLock's `lockAtMostFor`; default 60 s): longer than
    /// the job ever runs, since a run that outlasts it may overlap another's.
    pub fn at_most_for(mut self, at_most: Duration) -> Self {
        self.at_most = at_most;
        self
    }

    /// How long after a run begins its lock stays taken, even if it finished
    /// sooner (ShedLock's `lockAtLeastFor`; default 0). At most
    /// [`at_most_for`](Job::at_most_for).
    pub fn at_least_for(mut self, at_least: Duration) -> Self {
        self.at_least = at_least;
        self
    }

    /// Runs `job` with the hold's fencing token if no other node holds the job's
    /// lock; [`JobRun::Skipped`] otherwise.
    ///
    /// # Errors
    ///
    /// [`LockError::Config`] if `at_least_for` exceeds `at_most_for`; a bad name
    /// or lease; a backend error while taking the lock. Trouble after the job ran
    /// (a release or lease cut that failed) is logged, not returned: the run's
    /// output is not lost, and the lease bounds the hold anyway.
    pub async fn run<F, Fut, T>(self, job: F) -> Result<JobRun<T>>
    where
        F: FnOnce(FencingToken) -> Fut,
        Fut: Future<Output = T>,
    {
        if self.at_least > self.at_most {
            return Err(LockError::Config(format!(
                "job `{}`: at_least_for ({:?}) exceeds at_most_for ({:?})",
                self.name, self.at_least, self.at_most
            )));
        }
        // A fresh owner: a run never re-enters another run's hold.
        let taken = self
            .locker
            .lock(self.name.as_str())
            .owner(OwnerId::new())
            .lease(self.at_most)
            .no_wait()
            .await;
        let guard = match taken {
            Ok(guard) => guard,
            Err(LockError::Contended { .. }) => return Ok(JobRun::Skipped),
            Err(e) => return Err(e),
        };
        let began = Instant::now();
        let token = guard.token();
        let output = job(token).await;
        self.hold_at_least(guard, began).await;
        Ok(JobRun::Ran { output, token })
    }

    /// Releases `guard` now, or keeps it until `at_least_for` after `began`.
    async fn hold_at_least(&self, guard: LockGuard, began: Instant) {
        let keep = self.at_least.saturating_sub(began.elapsed());
        let outcome = if keep < MIN_TTL {
            guard.release().await
        } else if self.locker.capabilities().lease_expiry {
            match guard.extend(keep).await {
                Ok(()) => {
                    guard.keep_until_deadline();
                    Ok(())
                }
                Err(e) => Err(e),
            }
        } else {
            tokio::spawn(async move {
                tokio::time::sleep(keep).await;
                if let Err(error) = guard.release().await {
                    tracing::warn!(%error, "a job's lock could not be released after at_least_for");
                }
            });
            Ok(())
        };
        if let Err(error) = outcome {
            tracing::warn!(job = %self.name, %error, "the job ran, but its lock was not handed back cleanly; the lease bounds it");
        }
    }
}
