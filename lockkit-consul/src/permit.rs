//! Acquiring a permit: Consul's semaphore recipe, one attempt at a time.
//!
//! Each attempt reads the semaphore's keys (one `?recurse` read). A request whose
//! limit differs from the holders' fails at once. If a slot is free and no
//! contender queued earlier is still waiting for it, one transaction takes it:
//! it checks that no lock of the same name is held, locks our contender key
//! (writing it, so its `ModifyIndex` is the token) and writes the record with us
//! added and dead holders pruned, by check-and-set on the record's index. Several
//! contenders racing for one slot: one transaction applies, the others re-read
//! (invariants C1, C2).
//!
//! A contender that must wait locks its contender key (so it has a place in the
//! queue, by `CreateIndex`) and blocks: the first waiter on the whole prefix (a
//! release rewrites the record, a dead holder's key disappears), each later one on
//! the key of the waiter just ahead of it, which changes when that one is given a
//! slot or leaves. So a release wakes the first waiter, and the one behind it
//! moves up: not the whole queue.

use std::sync::Arc;

use lockkit_core::driver::{Attempt, Busy, Contender, Contention, limit_mismatch};
use lockkit_core::{AcquireRequest, FencingToken, Grant, LockError, Result, Wait, async_trait};
use tokio::time::Instant;

use crate::driver::{ConsulDriver, NAME};
use crate::holds::Hold;
use crate::keys::SemaphoreKeys;
use crate::permit_release::{give_back, leave};
use crate::semaphore::Snapshot;
use crate::session::Session;
use crate::txn_ops::{SEMAPHORE_FLAGS, TxnOp, TxnOutcome};
use crate::values::HoldValue;
use crate::wait::{Watch, block_until};

/// How many reads and writes one attempt makes against a semaphore that keeps
/// changing before it lets the wait engine call again.
const ROUNDS: usize = 8;

/// What one try for a slot came to.
enum Admit {
    Granted(Grant),
    /// A lock of the same name is held: block on its key from this index.
    LockHeld(u64),
    SessionGone,
    /// Something changed since the read: read again.
    Stale,
}

/// One permit acquire, as the wait engine drives it.
pub(crate) struct PermitContending<'a> {
    driver: &'a ConsulDriver,
    req: &'a AcquireRequest,
    limit: u32,
    kv_key: String,
    keys: SemaphoreKeys,
    /// The session this permit contends with (given back unless granted).
    session: Option<Arc<Session>>,
    /// Whether our contender key may exist (and we may even be in the record,
    /// after a transaction whose reply was lost).
    contending: bool,
    /// The lock key's ModifyIndex, when it was found unlocked (left by another
    /// client): the admission checks it is unchanged rather than absent.
    idle_lock_key: Option<u64>,
}

impl<'a> PermitContending<'a> {
    pub(crate) fn new(driver: &'a ConsulDriver, req: &'a AcquireRequest, limit: u32) -> Self {
        let kv_key = driver.kv_key(&req.key);
        Self {
            driver,
            req,
            limit,
            keys: SemaphoreKeys::of(&kv_key),
            kv_key,
            session: None,
            contending: false,
            idle_lock_key: None,
        }
    }

    pub(crate) fn contention(self) -> Contention<'a> {
        Contention::new(self)
    }

    /// Our session: the one taken before, or the driver's if no other permit of
    /// this semaphore uses it, or a spare.
    async fn session(&mut self) -> Result<Arc<Session>> {
        if let Some(s) = &self.session {
            return Ok(s.clone());
        }
        let (sessions, key) = (&self.driver.sessions, &self.req.key);
        let main = sessions.get().await?;
        let session = if sessions.permits.take(key, &main) {
            main
        } else if let Some(spare) = sessions.permits.take_spare(key) {
            spare
        } else {
            let spare = sessions.spare().await?;
            sessions.permits.add_spare(key, spare.clone());
            spare
        };
        self.session = Some(session.clone());
        Ok(session)
    }

    /// Our session is gone, and its keys with it: the next round takes another.
    fn session_gone(&mut self, session: &Session) {
        session.end("Consul says the session is invalid");
        self.contending = false;
        if let Some(s) = self.session.take() {
            let api = self.driver.api();
            give_back(api, &self.driver.sessions.permits, &self.req.key, &s.id);
        }
    }

    /// Tries for a slot: one transaction.
    async fn admit(&mut self, session: &Arc<Session>, seen: &Snapshot) -> Result<Admit> {
        let contender = self.keys.contender(&session.id);
        let mut ops = vec![match self.idle_lock_key {
            None => TxnOp::check_not_exists(&self.kv_key),
            Some(index) => TxnOp::check_index(&self.kv_key, index),
        }];
        let value = HoldValue::of(self.req, true).to_bytes();
        ops.push(TxnOp::lock_flagged(
            &contender,
            &value,
            &session.id,
            SEMAPHORE_FLAGS,
        ));
        let record = seen.record_after(self.limit, Some(&session.id), None);
        ops.extend(seen.write_record(&self.keys, &record));
        self.contending = true;
        let errors = match self.driver.api().txn(&ops).await? {
            TxnOutcome::Applied(results) => {
                let token = results.into_iter().flatten().find(|e| e.key == contender);
                let Some(token) = token.map(|e| e.modify_index) else {
                    return Err(LockError::Backend {
                        driver: NAME,
                        message: "a semaphore transaction returned no contender entry".into(),
                        source: None,
                    });
                };
                return Ok(Admit::Granted(self.granted(session, token)));
            }
            TxnOutcome::RolledBack(errors) => errors,
        };
        if TxnOutcome::session_invalid(&errors) {
            return Ok(Admit::SessionGone);
        }
        if TxnOutcome::failed(&errors, 0) {
            let (entry, index) = self.driver.api().kv_get(&self.kv_key, None).await?;
            match entry {
                Some(e) if e.session.is_some() => return Ok(Admit::LockHeld(index)),
                Some(e) => self.idle_lock_key = Some(e.modify_index),
                None => self.idle_lock_key = None,
            }
        }
        Ok(Admit::Stale)
    }

    /// Joins the queue: our contender key, locked by our session.
    async fn enter(&mut self, session: &Session) -> Result<Option<()>> {
        let contender = self.keys.contender(&session.id);
        let value = HoldValue::of(self.req, false).to_bytes();
        let op = TxnOp::lock_flagged(&contender, &value, &session.id, SEMAPHORE_FLAGS);
        self.contending = true;
        match self.driver.api().txn(&[op]).await? {
            TxnOutcome::Applied(_) => Ok(Some(())),
            TxnOutcome::RolledBack(errors) if TxnOutcome::session_invalid(&errors) => Ok(None),
            TxnOutcome::RolledBack(errors) => Err(LockError::Backend {
                driver: NAME,
                message: format!(
                    "Consul refused our semaphore contender key: {}",
                    errors
                        .into_iter()
                        .map(|(_, w)| w)
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
                source: None,
            }),
        }
    }

    /// Busy until `watch` sees a change, or the wait's deadline.
    fn busy(&self, watch: Watch) -> Attempt {
        let until = block_until(self.req);
        let wake = watch.changed(self.driver.api().clone(), until);
        Attempt::Busy(Busy::woken_by(wake).or_at(until))
    }

    /// Records the hold; the session now belongs to it.
    fn granted(&mut self, session: &Arc<Session>, token: u64) -> Grant {
        let held = Hold {
            mode: self.req.mode,
            kv_key: self.keys.contender(&session.id),
            token: FencingToken(token),
            session: session.clone(),
            loss: session.hold_loss(),
        };
        self.session = None;
        self.contending = false;
        self.driver
            .holds
            .insert(self.req.key.clone(), self.req.owner.clone(), held.clone());
        held.grant(self.req)
    }

    /// One attempt. A failed connection to the agent is transient
    /// ([`Attempt::failed`]): attempting again is safe, since a permit found
    /// already ours is taken as granted.
    async fn attempt_once(&mut self) -> Result<Attempt> {
        for _ in 0..ROUNDS {
            let seen = Snapshot::read(self.driver.api(), &self.keys, None).await?;
            if seen.record_locked {
                // `consul lock` holds the name as a plain lock.
                if matches!(self.req.wait, Wait::NoWait) {
                    return Ok(Attempt::Busy(Busy::poll()));
                }
                return Ok(self.busy(Watch::Prefix(self.keys.prefix.clone(), seen.index)));
            }
            if let Some(theirs) = seen.limit_in_use()
                && theirs != self.limit
            {
                return Err(limit_mismatch(self.req, theirs, self.limit));
            }
            // A session is taken only to write: a refused try costs one read.
            let ours = self.session.clone();
            let mine = ours.as_ref().map(|s| s.id.as_str());
            // Given a slot by a transaction whose reply was lost.
            if let Some(session) = &ours
                && self.contending
                && let Some((_, entry)) = seen.holders().find(|(s, _)| Some(*s) == mine)
            {
                let token = entry.modify_index;
                return Ok(Attempt::Granted(self.granted(session, token)));
            }
            let waiters = seen.waiters();
            let rank = waiters
                .iter()
                .position(|(s, _)| Some(*s) == mine)
                .unwrap_or(waiters.len());
            let room = (self.limit as usize).saturating_sub(seen.held());
            if rank < room {
                let session = self.session().await?;
                match self.admit(&session, &seen).await? {
                    Admit::Granted(g) => return Ok(Attempt::Granted(g)),
                    Admit::Stale => continue,
                    Admit::SessionGone => {
                        self.session_gone(&session);
                        continue;
                    }
                    Admit::LockHeld(index) => {
                        return Ok(self.busy(Watch::Key(self.kv_key.clone(), index)));
                    }
                }
            }
            if matches!(self.req.wait, Wait::NoWait) {
                return Ok(Attempt::Busy(Busy::poll()));
            }
            if rank == waiters.len() {
                // Not queued yet: join, then look again to see where we stand.
                let session = self.session().await?;
                if self.enter(&session).await?.is_none() {
                    self.session_gone(&session);
                }
                continue;
            }
            let watch = match rank.checked_sub(1).and_then(|r| waiters.get(r)) {
                Some((_, ahead)) => Watch::Key(ahead.key.clone(), ahead.modify_index),
                None => Watch::Prefix(self.keys.prefix.clone(), seen.index),
            };
            return Ok(self.busy(watch));
        }
        Ok(Attempt::Busy(Busy::until(Instant::now())))
    }
}

#[async_trait]
impl Contender for PermitContending<'_> {
    async fn attempt(&mut self) -> Result<Attempt> {
        self.attempt_once().await.or_else(Attempt::failed)
    }

    async fn give_up(&mut self, why: &LockError) {
        let Some(session) = self.session.take() else {
            return;
        };
        let api = self.driver.api();
        if self.contending
            && !session.is_gone()
            && let Err(e) = leave(api, &self.keys, &session.id).await
        {
            // Keep the session off this semaphore: its key may linger until the
            // session ends.
            tracing::warn!(error = %e, key = %self.req.key, %why, "could not leave the semaphore's queue");
            return;
        }
        give_back(
            api,
            &self.driver.sessions.permits,
            &self.req.key,
            &session.id,
        );
    }
}

impl Drop for PermitContending<'_> {
    fn drop(&mut self) {
        // Dropped mid-attempt (the client never does this; a direct caller may):
        // leave in the background, then give the session back.
        let Some(session) = self.session.take() else {
            return;
        };
        let (api, pool) = (
            self.driver.api().clone(),
            self.driver.sessions.permits.clone(),
        );
        let (key, keys, contending) = (self.req.key.clone(), self.keys.clone(), self.contending);
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        handle.spawn(async move {
            if contending && !session.is_gone() && leave(&api, &keys, &session.id).await.is_err() {
                return;
            }
            give_back(&api, &pool, &key, &session.id);
        });
    }
}
