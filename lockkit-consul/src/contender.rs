//! One Consul acquire, as the wait engine drives it: a lock transaction per
//! attempt, a blocking query on the key (or another owner of this driver letting go)
//! to wake, and a poll while a lock-delay runs out.

use std::time::Duration;

use lockkit_core::driver::{Attempt, Backoff, Busy, Contender, Jitter, WaitPolicy, wait_for_grant};
use lockkit_core::{AcquireRequest, Grant, LockError, Result, async_trait};
use tokio::time::Instant;

use crate::api::DRIVER;
use crate::driver::{ConsulDriver, Refused};

/// The longest single blocking query.
const MAX_BLOCK: Duration = Duration::from_secs(300);
/// How many fresh sessions one attempt tries when Consul says ours is gone.
const SESSION_RETRIES: usize = 3;

/// Nothing changes on the key when a lock-delay ends: poll, from 50 ms doubling to
/// 1 s.
const POLICY: WaitPolicy = WaitPolicy::DEFAULT.with_poll(Backoff::new(
    Duration::from_millis(50),
    Duration::from_secs(1),
    Jitter::None,
));

pub(crate) struct Contending<'a> {
    driver: &'a ConsulDriver,
    req: &'a AcquireRequest,
    kv_key: String,
}

impl<'a> Contending<'a> {
    pub(crate) fn new(driver: &'a ConsulDriver, req: &'a AcquireRequest) -> Self {
        Self {
            driver,
            req,
            kv_key: driver.kv_key(&req.key),
        }
    }

    pub(crate) async fn wait(mut self) -> Result<Grant> {
        let req = self.req;
        wait_for_grant(req, &POLICY, &mut self).await
    }
}

#[async_trait]
impl Contender for Contending<'_> {
    async fn attempt(&mut self) -> Result<Attempt> {
        for _ in 0..SESSION_RETRIES {
            let session = self.driver.sessions.get().await?;
            // Listen for another owner of this driver letting go of the key before
            // looking at it, so that a release in between is not missed.
            let mut unclaimed = Box::pin(self.driver.holds.unclaimed.clone().notified_owned());
            unclaimed.as_mut().enable();
            let index = match self
                .driver
                .try_once(self.req, &self.kv_key, &session)
                .await?
            {
                Ok(grant) => return Ok(Attempt::Granted(grant)),
                Err(Refused::SessionGone) => continue,
                Err(Refused::Delayed) => return Ok(Attempt::Busy(Busy::poll())),
                Err(Refused::Held(index)) => index,
            };
            // Block on the key until it changes, up to the wait's deadline.
            let block_until = self
                .req
                .wait
                .deadline()
                .map_or(Instant::now() + MAX_BLOCK, |d| {
                    d.min(Instant::now() + MAX_BLOCK)
                });
            let block = block_until
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1));
            let (api, kv_key) = (self.driver.api().clone(), self.kv_key.clone());
            let wake = async move {
                tokio::select! {
                    changed = api.kv_get(&kv_key, Some((index, block))) => changed.map(|_| ()),
                    () = unclaimed => Ok(()),
                }
            };
            return Ok(Attempt::Busy(Busy::woken_by(wake).or_at(block_until)));
        }
        Ok(Attempt::Transient(LockError::Connection {
            driver: DRIVER,
            message: format!(
                "Consul invalidated {SESSION_RETRIES} fresh sessions in a row while locking"
            ),
            source: None,
        }))
    }
}
