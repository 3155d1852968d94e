//! The acquire recipe: a claim on the key among this driver's owners, then one
//! lock transaction per attempt (the grant and its token in one round trip); the
//! wait engine blocks on the key between attempts (or on another owner of this
//! driver letting go), and polls while a lock-delay runs out. Also the release of
//! a hold nothing recorded (its acquire's reply was lost).

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::driver::{Attempt, Backoff, Busy, Contender, Jitter, WaitPolicy, wait_for_grant};
use lockkit_core::{
    AcquireRequest, FencingToken, Grant, LockError, LockKey, OwnerId, Result, async_trait,
};
use tokio::time::Instant;

use crate::api::{TxnOp, TxnOutcome};
use crate::driver::ConsulDriver;
use crate::driver::NAME;
use crate::holds::Held;
use crate::session::Session;

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

/// Why a lock attempt did not take the key.
enum Refused {
    /// Another session (or another owner of this driver) holds it; block on the
    /// key from this index.
    Held(u64),
    /// Free, but Consul refuses it: the lock-delay of an invalidated holder.
    Delayed,
    /// Our session is gone: make a new one.
    SessionGone,
}

impl ConsulDriver {
    /// One attempt: the lock and its token in one transaction.
    async fn try_once(
        &self,
        req: &AcquireRequest,
        kv_key: &str,
        session: &Arc<Session>,
    ) -> Result<std::result::Result<Grant, Refused>> {
        if !self.holds.claim(&req.key, &req.owner) {
            let (_, index) = self.api().kv_get(kv_key, None).await?;
            return Ok(Err(Refused::Held(index)));
        }
        let owner = req.owner.to_hex();
        let outcome = self
            .api()
            .txn(&[TxnOp::lock(kv_key, owner.as_bytes(), &session.id)])
            .await;
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                self.holds.unclaim(&req.key, &req.owner);
                return Err(e);
            }
        };
        match outcome {
            TxnOutcome::Applied(results) => {
                let Some(Some(entry)) = results.into_iter().next() else {
                    self.holds.unclaim(&req.key, &req.owner);
                    return Err(LockError::Backend {
                        driver: NAME,
                        message: "a lock transaction returned no entry".into(),
                        source: None,
                    });
                };
                // Born lost if the session ended meanwhile: a child of its signal.
                let held = Held {
                    kv_key: kv_key.to_string(),
                    token: FencingToken(entry.modify_index),
                    session: session.clone(),
                    loss: session.hold_loss(),
                };
                self.holds
                    .insert(req.key.clone(), req.owner.clone(), held.clone());
                Ok(Ok(held.grant(req)))
            }
            TxnOutcome::RolledBack(errors) => {
                self.holds.unclaim(&req.key, &req.owner);
                if errors
                    .iter()
                    .any(|(_, what)| what.contains("invalid session"))
                {
                    session.end("Consul says the session is invalid");
                    return Ok(Err(Refused::SessionGone));
                }
                let (entry, index) = self.api().kv_get(kv_key, None).await?;
                Ok(Err(match entry.and_then(|e| e.session) {
                    Some(_) => Refused::Held(index),
                    None => Refused::Delayed,
                }))
            }
        }
    }

    /// Deletes the key if our session holds it for `owner` (after an acquire whose
    /// reply was lost, nothing is recorded).
    pub(crate) async fn release_unrecorded(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        // Only the session in use can hold it; do not create one to find out.
        let Some(session) = self.sessions.current().await else {
            return Ok(false);
        };
        let kv_key = self.kv_key(key);
        let (entry, _) = self.api().kv_get(&kv_key, None).await?;
        match entry {
            Some(e)
                if e.session.as_deref() == Some(session.id.as_str())
                    && e.value().as_deref() == Some(owner.to_hex().as_bytes()) =>
            {
                self.api().delete_at(&kv_key, e.modify_index).await
            }
            _ => Ok(false),
        }
    }
}

/// One acquire, as the wait engine drives it.
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
            driver: NAME,
            message: format!(
                "Consul invalidated {SESSION_RETRIES} fresh sessions in a row while locking"
            ),
            source: None,
        }))
    }
}
