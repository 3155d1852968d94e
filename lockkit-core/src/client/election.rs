//! [`Election`]: candidates campaign for one name, and one of them leads.

use std::time::Duration;

use super::leadership::Leadership;
use super::locker::Locker;
use super::observe::Observer;
use crate::driver::{Inspection, LockMode, validate_value};
use crate::error::Result;
use crate::types::FencingToken;

/// A leader election on one name, made by [`Locker::election`]; cheap to clone.
///
/// The leader is the exclusive holder of the lock named after the election, and
/// its hold stores the leader's value (an address, an id) where the backend keeps a
/// holder's label. So everything a lock promises, a leadership keeps:
/// - at most one leader at a time, for as long as its lease runs;
/// - each term's number is the hold's fencing token, strictly greater than every
///   term before it: hand it to the resources the leader writes to;
/// - the watchdog renews it, [`Leadership::lost`] fires when it cannot, and a
///   leader that dies is replaced once its lease (or session) ends.
///
/// `lockkit inspect URL NAME` shows the leader like any holder.
///
/// # Examples
///
/// ```
/// use std::{sync::Arc, time::Duration};
/// use lockkit::{Locker, mem::MemDriver};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), lockkit::LockError> {
/// let locker = Locker::new(Arc::new(MemDriver::new())).with_label("node-a");
/// let election = locker.election("scheduler").ttl(Duration::from_secs(3));
///
/// let leading = election.campaign("10.0.0.7:8080").await?;
/// let leader = election.leader().await?.expect("someone leads");
/// assert_eq!(leader.value.as_deref(), Some("10.0.0.7:8080"));
/// assert_eq!(leader.term, leading.term());
/// assert_eq!(leader.label.as_deref(), Some("node-a"));
///
/// leading.resign().await?;
/// assert!(election.leader().await?.is_none());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Election {
    locker: Locker,
    name: String,
    ttl: Option<Duration>,
}

/// Who leads an election, as [`Election::leader`] and [`Observer`] read it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Leader {
    /// The value the leader campaigned with, or proclaimed since.
    pub value: Option<String>,
    /// Its term: the fencing token of its hold.
    pub term: FencingToken,
    /// Its owner label ([`Locker::with_label`]).
    pub label: Option<String>,
    /// How long its lease has left, as the backend saw it; `None` for a
    /// session-bound hold.
    pub remaining: Option<Duration>,
}

impl Leader {
    /// The leader an inspection shows: its exclusive holder, if any.
    pub fn from_inspection(seen: &Inspection) -> Option<Self> {
        seen.holders
            .iter()
            .find(|h| h.mode == LockMode::Exclusive)
            .map(|h| Leader {
                value: h.value.clone(),
                term: h.token,
                label: h.label.clone(),
                remaining: h.remaining,
            })
    }

    /// Whether `other` is the same leader with the same value: the lease left
    /// aside, which changes with every reading.
    pub fn same_as(&self, other: &Leader) -> bool {
        (self.term, &self.value, &self.label) == (other.term, &other.value, &other.label)
    }
}

impl Locker {
    /// An election on `name`: the lock `name`, whose holder stores the leader's
    /// value. Needs a driver with inspection for [`Election::leader`] and
    /// [`Election::observe`], and [`crate::Capabilities::proclaim`] for
    /// [`Leadership::proclaim`].
    pub fn election(&self, name: impl Into<String>) -> Election {
        Election {
            locker: self.clone(),
            name: name.into(),
            ttl: None,
        }
    }
}

impl Election {
    /// The election's name (its lock's key).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The leader's lease, renewed by the watchdog every `ttl / 3`: a leader that
    /// dies is replaced at most `ttl` later. Default: the `Locker`'s watchdog TTL.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Waits until this candidate leads, then returns its [`Leadership`], whose
    /// hold stores `value` for [`leader`](Election::leader) to read.
    ///
    /// Candidates are served in the order the backend serves lock waiters
    /// ([`crate::Capabilities::fair`]).
    ///
    /// # Errors
    ///
    /// [`crate::LockError::Config`] for a value over
    /// [`crate::driver::MAX_VALUE_LEN`] bytes or with a NUL, an invalid name, or a
    /// backend error.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as a lock request: wrap it in `tokio::time::timeout` to give
    /// up; a leadership granted meanwhile is released in the background.
    pub async fn campaign(&self, value: impl Into<String>) -> Result<Leadership> {
        let value = value.into();
        validate_value(&value)?;
        let mut request = self.locker.lock(self.name.clone()).wait_forever();
        if let Some(ttl) = self.ttl {
            request = request.ttl(ttl);
        }
        request.value = Some(value.clone());
        let guard = request.await?;
        Ok(Leadership::new(guard, value))
    }

    /// The current leader, or `None` when nobody leads. Reads only.
    ///
    /// # Errors
    ///
    /// [`crate::LockError::Unsupported`] on a driver without inspection, or a
    /// backend error.
    pub async fn leader(&self) -> Result<Option<Leader>> {
        let seen = self.locker.inspect(self.name.clone()).await?;
        Ok(Leader::from_inspection(&seen))
    }

    /// Arms the driver's change signal on the election's lock; `None` when
    /// the driver fails to (the observer then waits its interval).
    pub(super) async fn arm(&self) -> Option<crate::driver::ChangeSignal> {
        let key = crate::types::LockKey::new(self.name.clone()).ok()?;
        self.locker.driver().watch(&key).await.ok()
    }

    /// Follows the leader: each [`Observer::changed`] returns the next leader (or
    /// the absence of one) that differs from the last it returned.
    pub fn observe(&self) -> Observer {
        Observer::new(self.clone())
    }
}
