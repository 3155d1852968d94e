//! [`Election`]: candidates campaign for one name, and one of them leads;
//! [`Observer`]: follows the leader. The blocking twins of
//! [`crate::Election`] and [`crate::Observer`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Leadership, OwnRuntime};
use crate::{Leader, LockError, Result};

/// A leader election on one name, made by [`super::Locker::election`]; cheap to
/// clone. As [`crate::Election`]: the leader is the exclusive holder of the lock
/// named after the election, its term is the hold's fencing token, and the
/// watchdog keeps it.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// # fn main() -> Result<(), lockkit::LockError> {
/// # let dir = tempfile::tempdir().map_err(|e| lockkit::LockError::Config(e.to_string()))?;
/// # let url = format!("sqlite://{}", dir.path().join("locks.db").display());
/// let node_a = lockkit::blocking::connect(&url)?;
/// let node_b = lockkit::blocking::connect(&url)?; // another process, say
/// let leading = node_a.election("scheduler").campaign("10.0.0.7:8080")?;
///
/// let election = node_b.election("scheduler");
/// let leader = election.leader()?.expect("someone leads");
/// assert_eq!(leader.value.as_deref(), Some("10.0.0.7:8080"));
/// // node_b waits its turn, at most 50 ms here:
/// assert!(election.campaign_within("10.0.0.8:8080", Duration::from_millis(50)).is_err());
///
/// leading.resign()?;
/// let next = election.campaign("10.0.0.8:8080")?;
/// assert!(next.term() > leader.term);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Election {
    election: crate::Election,
    runtime: Arc<OwnRuntime>,
}

impl Election {
    pub(super) fn new(election: crate::Election, runtime: Arc<OwnRuntime>) -> Self {
        Self { election, runtime }
    }

    /// The election's name (its lock's key).
    pub fn name(&self) -> &str {
        self.election.name()
    }

    /// The leader's lease, renewed by the watchdog every `ttl / 3`: a leader that
    /// dies is replaced at most `ttl` later.
    pub fn ttl(self, ttl: Duration) -> Self {
        Self {
            election: self.election.ttl(ttl),
            ..self
        }
    }

    /// Waits until this candidate leads, then returns its [`Leadership`], whose
    /// hold stores `value` for [`leader`](Self::leader) to read.
    ///
    /// # Errors
    ///
    /// As [`crate::Election::campaign`].
    pub fn campaign(&self, value: impl Into<String>) -> Result<Leadership> {
        let leadership = self.runtime.call(self.election.campaign(value))?;
        Ok(Leadership::new(leadership, self.runtime.clone()))
    }

    /// Waits at most `wait` for this candidate to lead.
    ///
    /// # Errors
    ///
    /// [`LockError::Timeout`] if another candidate led all along (a leadership
    /// granted as the time ran out is resigned in the background); as
    /// [`campaign`](Self::campaign).
    pub fn campaign_within(&self, value: impl Into<String>, wait: Duration) -> Result<Leadership> {
        let started = Instant::now();
        match self
            .runtime
            .block_on_within(wait, self.election.campaign(value))?
        {
            Some(leadership) => Ok(Leadership::new(leadership?, self.runtime.clone())),
            None => Err(self.timeout(started)),
        }
    }

    /// The current leader, or `None` when nobody leads. Reads only.
    ///
    /// # Errors
    ///
    /// As [`crate::Election::leader`].
    pub fn leader(&self) -> Result<Option<Leader>> {
        self.runtime.call(self.election.leader())
    }

    /// Follows the leader: each [`Observer::changed`] returns the next leader (or
    /// the absence of one) that differs from the last it returned.
    pub fn observe(&self) -> Observer {
        Observer {
            observer: self.election.observe(),
            election: self.clone(),
        }
    }

    /// A wait on the election, begun at `started`, that ran out.
    fn timeout(&self, started: Instant) -> LockError {
        LockError::Timeout {
            key: self.name().to_owned(),
            waited: started.elapsed(),
        }
    }
}

/// Follows the leader of an election, as [`crate::Observer`]: made by
/// [`Election::observe`].
#[derive(Debug)]
pub struct Observer {
    observer: crate::Observer,
    election: Election,
}

impl Observer {
    /// Reads the leader every `interval` (at least 1 ms) while waiting for a
    /// change (default [`crate::DEFAULT_OBSERVE_INTERVAL`]).
    pub fn interval(self, interval: Duration) -> Self {
        Self {
            observer: self.observer.interval(interval),
            ..self
        }
    }

    /// Blocks until the leader differs from the last one returned: `None` when
    /// nobody leads. The first call returns the current leader at once.
    ///
    /// # Errors
    ///
    /// As [`crate::Observer::changed`].
    pub fn changed(&mut self) -> Result<Option<Leader>> {
        self.election.runtime.call(self.observer.changed())
    }

    /// As [`changed`](Self::changed), waiting at most `wait` for a change.
    ///
    /// # Errors
    ///
    /// [`LockError::Timeout`] if the leader stayed the same for `wait` (the next
    /// call still compares with the last leader returned); as
    /// [`changed`](Self::changed).
    pub fn changed_within(&mut self, wait: Duration) -> Result<Option<Leader>> {
        let (started, runtime) = (Instant::now(), self.election.runtime.clone());
        match runtime.block_on_within(wait, self.observer.changed())? {
            Some(changed) => changed,
            None => Err(self.election.timeout(started)),
        }
    }
}
