//! [`Observer`]: follows an election's leader.

use std::time::Duration;

use futures_util::Stream;

use super::election::{Election, Leader};
use crate::error::Result;

/// How often an [`Observer`] reads the leader by default.
pub const DEFAULT_OBSERVE_INTERVAL: Duration = Duration::from_millis(100);

/// Follows the leader of an election: made by [`Election::observe`].
///
/// Each [`changed`](Observer::changed) returns the next reading that differs from
/// the last one returned (another term, a proclaimed value, or no leader), so no
/// change between two readings is skipped, and none is returned twice. Readings
/// are [`Election::leader`]: after the backend signals a change on the election's
/// lock where it can ([`crate::LockDriver::watch`]), and at least every
/// [`interval`](Observer::interval). A change that comes and goes between two
/// readings (a leader that lasts less than one) is not seen.
///
/// # Examples
///
/// ```
/// use std::{sync::Arc, time::Duration};
/// use lockkit::{Locker, mem::MemDriver};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), lockkit::LockError> {
/// let locker = Locker::new(Arc::new(MemDriver::new()));
/// let election = locker.election("scheduler");
/// let mut observer = election.observe().interval(Duration::from_millis(10));
/// assert!(observer.changed().await?.is_none()); // nobody leads yet
///
/// let leading = election.campaign("a").await?;
/// let seen = observer.changed().await?.expect("a leader");
/// assert_eq!((seen.term, seen.value.as_deref()), (leading.term(), Some("a")));
///
/// leading.proclaim("b").await?;
/// assert_eq!(observer.changed().await?.and_then(|l| l.value).as_deref(), Some("b"));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Observer {
    election: Election,
    interval: Duration,
    last: Option<Option<Leader>>,
}

impl Observer {
    pub(super) fn new(election: Election) -> Self {
        Self {
            election,
            interval: DEFAULT_OBSERVE_INTERVAL,
            last: None,
        }
    }

    /// Reads the leader every `interval` (at least 1 ms) while waiting for a
    /// change.
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval.max(Duration::from_millis(1));
        self
    }

    /// The next leader that differs from the last one returned: `None` when
    /// nobody leads. The first call returns the current leader at once.
    ///
    /// # Errors
    ///
    /// A backend error from a reading; the next call reads again, and still
    /// compares with the last leader returned.
    pub async fn changed(&mut self) -> Result<Option<Leader>> {
        loop {
            // Armed before the reading: a change after the reading fires it.
            let signal = self.election.arm().await;
            let now = self.election.leader().await?;
            let same = match (&self.last, &now) {
                (None, _) => false,
                (Some(None), None) => true,
                (Some(Some(a)), Some(b)) => a.same_as(b),
                (Some(_), _) => false,
            };
            if !same {
                self.last = Some(now.clone());
                return Ok(now);
            }
            match signal {
                Some(signal) => {
                    let _ = tokio::time::timeout(self.interval, signal).await;
                }
                None => tokio::time::sleep(self.interval).await,
            }
        }
    }

    /// The changes as a stream; it ends after the first error.
    pub fn into_stream(self) -> impl Stream<Item = Result<Option<Leader>>> + Send {
        futures_util::stream::unfold(Some(self), |state| async move {
            let mut observer = state?;
            match observer.changed().await {
                Ok(leader) => Some((Ok(leader), Some(observer))),
                Err(e) => Some((Err(e), None)),
            }
        })
    }
}
