//! The lock recipe: a claim on the key among this driver's owners, then one
//! lock transaction per attempt (the grant and its token in one round trip; it
//! also checks that no semaphore of the same name exists, and reads it when one
//! does); the wait engine blocks on the key between attempts (or on the
//! semaphore's keys while it has holders, or on another owner of this driver
//! letting go), and polls while a lock-delay runs out. Also the release of a hold
//! nothing recorded (its acquire's reply was lost).

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::driver::{Attempt, Backoff, Busy, Contender, Contention, Jitter, WaitPolicy};
use lockkit_core::{
    AcquireRequest, FencingToken, Grant, LockError, LockKey, OwnerId, Result, async_trait,
};
use tokio::time::Instant;

use crate::driver::ConsulDriver;
use crate::driver::NAME;
use crate::holds::Hold;
use crate::keys::SemaphoreKeys;
use crate::semaphore::Snapshot;
use crate::session::Session;
use crate::txn_ops::{LOCK_FLAGS, TxnOp, TxnOutcome};
use crate::values::HoldValue;
use crate::wait::{Watch, block_until};

/// How many fresh sessions one attempt tries when Consul says ours is gone.
const SESSION_RETRIES: usize = 3;
/// How many times one attempt reads a semaphore record that changes under it.
const RECORD_RETRIES: usize = 3;

/// Nothing changes on the key when a lock-delay ends: poll, from 50 ms doubling to
/// 1 s (invariants C3, C5).
const POLICY: WaitPolicy = WaitPolicy::DEFAULT.with_poll(Backoff::new(
    Duration::from_millis(50),
    Duration::from_secs(1),
    Jitter::None,
));

/// Why a lock attempt did not take the key.
enum Refused {
    /// Another session (or another owner of this driver) holds it; block on the
    /// key from this index.
    Hold(u64),
    /// Free, but Consul refuses it: the lock-delay of an invalidated holder.
    Delayed,
    /// Our session is gone: make a new one.
    SessionGone,
    /// A semaphore of the same name has holders; block on its keys from this
    /// index.
    Permits(u64),
    /// The semaphore's record kept changing under us: attempt again at once.
    Retry,
}

impl ConsulDriver {
    /// One attempt: the lock and its token in one transaction, which also checks
    /// that no semaphore of the same name has holders.
    async fn try_once(
        &self,
        req: &AcquireRequest,
        kv_key: &str,
        session: &Arc<Session>,
    ) -> Result<std::result::Result<Grant, Refused>> {
        if !self.holds.claim(&req.key, &req.owner) {
            let (_, index) = self.api().kv_get(kv_key, None).await?;
            return Ok(Err(Refused::Hold(index)));
        }
        let outcome = self.lock_txn(req, kv_key, session).await;
        if !matches!(outcome, Ok(Ok(_))) {
            self.holds.unclaim(&req.key, &req.owner);
        }
        outcome
    }

    /// The lock transaction. While a semaphore record exists beside the key, it
    /// is read: with live holders the lock waits for them; without, the record is
    /// deleted by the same transaction that takes the lock.
    async fn lock_txn(
        &self,
        req: &AcquireRequest,
        kv_key: &str,
        session: &Arc<Session>,
    ) -> Result<std::result::Result<Grant, Refused>> {
        let sem = SemaphoreKeys::of(kv_key);
        let value = HoldValue::of(req, false).to_bytes();
        // The record's ModifyIndex once it was read without holders.
        let mut idle_record: Option<u64> = None;
        for _ in 0..RECORD_RETRIES {
            let mut ops = match idle_record {
                None => vec![TxnOp::check_not_exists(&sem.record)],
                Some(index) => vec![
                    TxnOp::check_index(&sem.record, index),
                    TxnOp::delete(&sem.record),
                ],
            };
            let lock_op = ops.len();
            ops.push(TxnOp::lock_flagged(kv_key, &value, &session.id, LOCK_FLAGS));
            let errors = match self.api().txn(&ops).await? {
                TxnOutcome::Applied(results) => {
                    let entry = results.into_iter().flatten().find(|e| e.key == kv_key);
                    let Some(entry) = entry else {
                        return Err(LockError::Backend {
                            driver: NAME,
                            message: "a lock transaction returned no entry".into(),
                            source: None,
                        });
                    };
                    // Born lost if the session ended meanwhile: a child of its signal.
                    let held = Hold {
                        mode: req.mode,
                        kv_key: kv_key.to_string(),
                        token: FencingToken(entry.modify_index),
                        session: session.clone(),
                        loss: session.hold_loss(),
                    };
                    self.holds
                        .insert(req.key.clone(), req.owner.clone(), held.clone());
                    return Ok(Ok(held.grant(req)));
                }
                TxnOutcome::RolledBack(errors) => errors,
            };
            if TxnOutcome::session_invalid(&errors) {
                session.end("Consul says the session is invalid");
                return Ok(Err(Refused::SessionGone));
            }
            if TxnOutcome::failed(&errors, lock_op) {
                let (entry, index) = self.api().kv_get(kv_key, None).await?;
                return Ok(Err(match entry.and_then(|e| e.session) {
                    Some(_) => Refused::Hold(index),
                    None => Refused::Delayed,
                }));
            }
            // Only the record check failed: see whether the semaphore is in use.
            let seen = Snapshot::read(self.api(), &sem, None).await?;
            if seen.held() > 0 || seen.record_locked {
                return Ok(Err(Refused::Permits(seen.index)));
            }
            idle_record = (seen.record_index != 0).then_some(seen.record_index);
        }
        Ok(Err(Refused::Retry))
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
                    && HoldValue::parse(e.value().as_deref())
                        .is_some_and(|v| v.owner == owner.to_hex()) =>
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

    pub(crate) fn contention(self) -> Contention<'a> {
        Contention::new(self).with_policy(POLICY)
    }
}

#[async_trait]
impl Contender for Contending<'_> {
    async fn attempt(&mut self) -> Result<Attempt> {
        for _ in 0..SESSION_RETRIES {
            let session = match self.driver.sessions.get().await {
                Ok(session) => session,
                Err(e) => return Attempt::failed(e),
            };
            // Listen for another owner of this driver letting go of the key before
            // looking at it, so that a release in between is not missed.
            let mut unclaimed = Box::pin(self.driver.holds.unclaimed.clone().notified_owned());
            unclaimed.as_mut().enable();
            // A connection error is transient (`Attempt::failed`): the `lock` verb
            // grants a session that already holds the key again, and the driver's
            // claim keeps its owners apart (invariant C1).
            let tried = match self.driver.try_once(self.req, &self.kv_key, &session).await {
                Ok(tried) => tried,
                Err(e) => return Attempt::failed(e),
            };
            let watch = match tried {
                Ok(grant) => return Ok(Attempt::Granted(grant)),
                Err(Refused::SessionGone) => continue,
                Err(Refused::Delayed) => return Ok(Attempt::Busy(Busy::poll())),
                Err(Refused::Retry) => return Ok(Attempt::Busy(Busy::until(Instant::now()))),
                Err(Refused::Hold(index)) => Watch::Key(self.kv_key.clone(), index),
                Err(Refused::Permits(index)) => {
                    Watch::Prefix(SemaphoreKeys::of(&self.kv_key).prefix, index)
                }
            };
            // Block until what refused us changes, up to the wait's deadline.
            let block_until = block_until(self.req);
            let changed = watch.changed(self.driver.api().clone(), block_until);
            let wake = async move {
                tokio::select! {
                    changed = changed => changed,
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
