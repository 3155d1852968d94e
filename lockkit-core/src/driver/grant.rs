//! What a driver answers: a grant, and the renewals it is asked for.

use std::time::Duration;

use tokio::time::Instant;

use super::request::{AcquireRequest, LockMode};
use crate::loss::LossSignal;
use crate::types::{FencingToken, LockKey, OwnerId};

/// What a driver returns when it grants a hold.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Grant {
    /// The lock.
    pub key: LockKey,
    /// The holder.
    pub owner: OwnerId,
    /// What the hold excludes: the request's mode.
    pub mode: LockMode,
    /// The fencing token of this hold.
    pub token: FencingToken,
    /// When the lease ends, on the monotonic clock, measured from *before* the request
    /// that set it was sent (so it is never later than the backend's own expiry).
    pub deadline: Instant,
    /// Fires when the backend tells the driver the hold is gone (see [`LossSignal`]).
    pub loss: Option<LossSignal>,
    /// The lease the backend actually applies, when it differs from the one asked
    /// for: how long the backend keeps the hold after its last renewal if the
    /// holder vanishes. etcd, for one, grants no lease shorter than 1.5 × its
    /// election timeout (2 s with default flags), and only whole seconds. `None`:
    /// the lease asked for.
    pub effective_ttl: Option<Duration>,
}

impl Grant {
    /// An exclusive grant of `key` to `owner`.
    pub fn new(key: LockKey, owner: OwnerId, token: FencingToken, deadline: Instant) -> Self {
        Self {
            key,
            owner,
            mode: LockMode::Exclusive,
            token,
            deadline,
            loss: None,
            effective_ttl: None,
        }
    }

    /// The grant of `req` (its key, owner and mode) with `token`, until `deadline`.
    pub fn of(req: &AcquireRequest, token: FencingToken, deadline: Instant) -> Self {
        Self {
            mode: req.mode,
            ..Self::new(req.key.clone(), req.owner.clone(), token, deadline)
        }
    }

    /// With a signal the driver fires the moment it learns the hold is gone (a
    /// session that disconnected or expired, a deleted node), so that
    /// [`crate::LockGuard::lost`] fires then rather than at the next renewal.
    pub fn with_loss_signal(mut self, loss: LossSignal) -> Self {
        self.loss = Some(loss);
        self
    }

    /// With the lease the backend applies, where it is not the one asked for (see
    /// [`Grant::effective_ttl`]).
    pub fn with_effective_ttl(mut self, ttl: Duration) -> Self {
        self.effective_ttl = Some(ttl);
        self
    }
}

/// One renewal in a batch (see [`crate::LockDriver::extend_many`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Renewal {
    /// The lock.
    pub key: LockKey,
    /// The holder.
    pub owner: OwnerId,
    /// The new lease, counted from now.
    pub ttl: Duration,
}

impl Renewal {
    /// A renewal of `key` held by `owner` for another `ttl`.
    pub fn new(key: LockKey, owner: OwnerId, ttl: Duration) -> Self {
        Self { key, owner, ttl }
    }
}
