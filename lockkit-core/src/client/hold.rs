//! One hold on the backend, shared by every reentrant guard of the same owner.

use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::metrics::{HoldMeter, Labels};
use crate::driver::LockMode;
use crate::loss::LossSignal;
use crate::sync::lock;
use crate::types::{FencingToken, LockKey, OwnerId};

/// Why a hold can no longer be trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LostReason {
    /// The lease deadline passed without a successful renewal.
    Expired,
    /// The backend says the hold is gone (deleted, expired there, or taken over).
    Gone,
    /// The backend session that carried the hold ended.
    SessionEnded(String),
}

impl fmt::Display for LostReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LostReason::Expired => f.write_str("the lease deadline passed without a renewal"),
            LostReason::Gone => f.write_str("the backend no longer has this hold"),
            LostReason::SessionEnded(why) => write!(f, "the backend session ended: {why}"),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct HoldState {
    pub(crate) deadline: Instant,
    pub(crate) lost: Option<LostReason>,
}

/// The shared state of one backend hold.
#[derive(Debug)]
pub(crate) struct Hold {
    pub(crate) key: LockKey,
    pub(crate) owner: OwnerId,
    pub(crate) token: FencingToken,
    /// What the hold excludes.
    pub(crate) mode: LockMode,
    /// `Some(ttl)` when the watchdog renews this hold every `ttl / 3`.
    pub(crate) renew_ttl: Option<Duration>,
    /// The lease the backend applies (the one asked for, unless the backend
    /// raised it).
    pub(crate) effective_ttl: Duration,
    /// Fired by the driver when the backend drops the hold.
    pub(crate) loss: Option<LossSignal>,
    pub(crate) state: watch::Sender<HoldState>,
    /// Its part in the metrics.
    pub(crate) meter: HoldMeter,
    inner: Mutex<HoldInner>,
}

#[derive(Debug)]
struct HoldInner {
    count: usize,
    released: bool,
    next_renewal: Instant,
}

impl Hold {
    pub(crate) fn new(
        grant: crate::driver::Grant,
        ttl: Duration,
        renew_ttl: Option<Duration>,
        acquired_at: Instant,
        labels: Labels,
    ) -> Self {
        let crate::driver::Grant {
            key,
            owner,
            mode,
            token,
            deadline,
            loss,
            effective_ttl,
        } = grant;
        let (state, _) = watch::channel(HoldState {
            deadline,
            lost: None,
        });
        let next_renewal = renew_ttl.map_or(deadline, |ttl| acquired_at + ttl / 3);
        Self {
            key,
            owner,
            token,
            mode,
            renew_ttl,
            effective_ttl: effective_ttl.unwrap_or(ttl),
            loss,
            state,
            meter: HoldMeter::new(labels),
            inner: Mutex::new(HoldInner {
                count: 1,
                released: false,
                next_renewal,
            }),
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, HoldInner> {
        lock(&self.inner)
    }

    /// Adds a reentrant holder. Returns false if the hold is already over.
    pub(crate) fn try_reenter(&self) -> bool {
        if !self.is_live() {
            return false;
        }
        let mut inner = self.inner();
        if inner.released || inner.count == 0 {
            return false;
        }
        inner.count += 1;
        true
    }

    /// Removes one holder; true when it was the last, and the hold is now released.
    pub(crate) fn leave(&self) -> bool {
        let mut inner = self.inner();
        inner.count = inner.count.saturating_sub(1);
        if inner.count == 0 && !inner.released {
            inner.released = true;
            true
        } else {
            false
        }
    }

    pub(crate) fn count(&self) -> usize {
        self.inner().count
    }

    pub(crate) fn is_released(&self) -> bool {
        self.inner().released
    }

    pub(crate) fn deadline(&self) -> Instant {
        self.state.borrow().deadline
    }

    pub(crate) fn lost_reason(&self) -> Option<LostReason> {
        let st = self.state.borrow();
        if let Some(reason) = &st.lost {
            return Some(reason.clone());
        }
        if let Some(why) = self.loss.as_ref().and_then(LossSignal::reason) {
            return Some(LostReason::SessionEnded(why));
        }
        (Instant::now() >= st.deadline).then_some(LostReason::Expired)
    }

    pub(crate) fn is_live(&self) -> bool {
        self.lost_reason().is_none()
    }

    pub(crate) fn next_renewal(&self) -> Instant {
        self.inner().next_renewal
    }

    /// Records a successful renewal that was sent at `sent_at`.
    pub(crate) fn renewed(&self, deadline: Instant, sent_at: Instant) {
        if let Some(ttl) = self.renew_ttl {
            self.inner().next_renewal = sent_at + ttl / 3;
        }
        self.state.send_modify(|st| {
            if st.lost.is_none() {
                st.deadline = deadline;
            }
        });
    }

    /// Schedules another renewal attempt soon after a transient failure.
    pub(crate) fn retry_renewal(&self) {
        let ttl = self.renew_ttl.unwrap_or(Duration::from_secs(1));
        let backoff = (ttl / 10).clamp(Duration::from_millis(5), Duration::from_secs(1));
        self.inner().next_renewal = Instant::now() + backoff;
    }

    pub(crate) fn mark_lost(&self, reason: LostReason) {
        self.state.send_modify(|st| {
            if st.lost.is_none() {
                st.lost = Some(reason);
            }
        });
        self.meter.lost();
    }
}
