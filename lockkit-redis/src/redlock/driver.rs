//! [`RedlockDriver`] and its [`LockDriver`] impl, which hands each call to the
//! file that does it (see the module docs).

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::driver::Contention;
use lockkit_core::{
    AcquireRequest, Capabilities, LockDriver, LockKey, OwnerId, Renewal, Result, WakeUp,
    async_trait,
};
use tokio::time::Instant;

use super::NAME;
use super::contender::Contending;
use super::master::{self, Master};
use super::quorum::{count, quorum_unreachable, unreachable_error};
use crate::keys::{KeyLayout, Names, names};
use crate::options::FenceSeed;
use crate::scripts::Scripts;

#[doc = include_str!("design.md")]
#[derive(Clone)]
pub struct RedlockDriver {
    pub(super) inner: Arc<Inner>,
}

/// What every clone of a driver shares.
pub(super) struct Inner {
    pub(super) masters: Vec<Master>,
    pub(super) quorum: usize,
    pub(super) scripts: Arc<Scripts>,
    pub(super) prefix: String,
    /// The fixed part of the clock-drift allowance.
    pub(super) drift: Duration,
    pub(super) retry: Duration,
    /// The cap on one request to one master.
    pub(super) request_timeout: Duration,
    pub(super) fence_seed: FenceSeed,
    /// Where each lock's own key lives.
    pub(super) keys: KeyLayout,
    /// `<prefix>:wake:`, the wake channels' prefix on every master.
    pub(super) wake_prefix: String,
    /// Whether waiters are woken by releases (`wake=notify`) or only poll.
    pub(super) notify: bool,
}

impl std::fmt::Debug for RedlockDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedlockDriver")
            .field("masters", &self.inner.masters)
            .field("quorum", &self.inner.quorum)
            .field("prefix", &self.inner.prefix)
            .finish_non_exhaustive()
    }
}

impl RedlockDriver {
    pub(super) fn names(&self, key: &LockKey) -> Names {
        names(&self.inner.prefix, self.inner.keys, key)
    }
}

#[async_trait]
impl LockDriver for RedlockDriver {
    fn name(&self) -> &'static str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::baseline().with_wake_up(if self.inner.notify {
            WakeUp::Notify
        } else {
            WakeUp::Poll
        })
    }

    async fn contend<'a>(&'a self, req: &'a AcquireRequest) -> Result<Contention<'a>> {
        self.inner.keys.check(&req.key)?;
        Ok(Contending::new(self, req).contention())
    }

    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant> {
        self.extend_one(key, owner, ttl).await
    }

    async fn extend_many(&self, renewals: &[Renewal]) -> Vec<Result<Instant>> {
        self.renew_all(renewals).await
    }

    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        let n = self.names(key);
        let replies = self
            .release_everywhere(&n, &owner.to_hex(), self.inner.request_timeout)
            .await;
        if count(&replies, |v| *v == 1) > 0 {
            return Ok(true);
        }
        if quorum_unreachable(&replies, self.inner.quorum) {
            return Err(unreachable_error(&replies, self.inner.quorum));
        }
        Ok(false)
    }

    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        let (s, n) = (&self.inner.scripts, self.names(key));
        let wake = self.inner.wake_prefix.as_str();
        let call = master::force_release(s, &n, wake);
        let replies = self
            .on_every_master(self.inner.request_timeout, |c| call.run::<i64>(c))
            .await;
        if quorum_unreachable(&replies, self.inner.quorum) {
            return Err(unreachable_error(&replies, self.inner.quorum));
        }
        Ok(count(&replies, |v| *v == 1) > 0)
    }

    /// Deletes the lock, its counter and its waiters on every master that answers;
    /// an error unless a quorum did.
    async fn purge(&self, key: &LockKey) -> Result<()> {
        let n = self.names(key);
        let replies = self
            .on_every_master(self.inner.request_timeout, |c| master::purge(c, &n))
            .await;
        if quorum_unreachable(&replies, self.inner.quorum) {
            return Err(unreachable_error(&replies, self.inner.quorum));
        }
        Ok(())
    }
}
