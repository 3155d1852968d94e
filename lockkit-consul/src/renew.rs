//! Renewal: one session renew per watchdog round, whatever the number of holds,
//! then one transaction of `check-session` operations per 64 holds, so a key
//! deleted behind our back (`force_release`) is reported `Lost` at the next round
//! (invariant C4).

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::{LockError, LockKey, OwnerId, Renewal, Result};
use tokio::time::Instant;

use crate::driver::ConsulDriver;
use crate::driver::NAME;
use crate::holds::Hold;
use crate::session::Session;
use crate::txn_ops::{TxnOp, TxnOutcome};

/// How many operations Consul takes in one transaction.
const TXN_MAX_OPS: usize = 64;
/// Why a hold whose `check-session` failed is lost.
const NOT_OURS: &str = "the lock key is no longer held by our session";

impl ConsulDriver {
    /// Our live hold, as far as this side knows.
    fn live_hold(&self, key: &LockKey, owner: &OwnerId) -> Result<Hold> {
        let Some(held) = self.holds.get(key, owner) else {
            return Err(LockError::lost(key, "this driver holds no such lock"));
        };
        if let Some(why) = held.loss.reason() {
            return Err(LockError::lost(key, why));
        }
        if held.session.is_gone() {
            return Err(LockError::lost(key, "the Consul session is gone"));
        }
        Ok(held)
    }

    /// An explicit extend: one `check-session` of the hold's key.
    pub(crate) async fn check_one(
        &self,
        key: &LockKey,
        owner: &OwnerId,
        ttl: Duration,
    ) -> Result<Instant> {
        let sent = Instant::now();
        let held = self.live_hold(key, owner)?;
        let ops = [TxnOp::check_session(&held.kv_key, &held.session.id)];
        match self.api().txn(&ops).await? {
            TxnOutcome::Applied(_) => Ok(sent + ttl),
            TxnOutcome::RolledBack(_) => {
                held.loss.fire(NOT_OURS);
                Err(LockError::lost(key, NOT_OURS))
            }
        }
    }

    /// A watchdog round: each session renewed once, then every key checked.
    pub(crate) async fn renew_round(&self, renewals: &[Renewal]) -> Vec<Result<Instant>> {
        let sent = Instant::now();
        let mut out: Vec<Result<Instant>> = Vec::with_capacity(renewals.len());
        let mut checks: Vec<(usize, Hold)> = Vec::new();
        for (i, r) in renewals.iter().enumerate() {
            match self.live_hold(&r.key, &r.owner) {
                Ok(h) => {
                    checks.push((i, h));
                    out.push(Ok(sent + r.ttl));
                }
                Err(e) => out.push(Err(e)),
            }
        }
        // One renewal per session, whatever the number of locks on it.
        let mut sessions: Vec<Arc<Session>> = Vec::new();
        for (_, h) in &checks {
            if !sessions.iter().any(|s| s.id == h.session.id) {
                sessions.push(h.session.clone());
            }
        }
        for s in &sessions {
            if let Err(e) = self.sessions.renew(s).await {
                let message = e.to_string();
                for (i, h) in &checks {
                    if h.session.id == s.id {
                        out[*i] = Err(LockError::Connection {
                            driver: NAME,
                            message: message.clone(),
                            source: None,
                        });
                    }
                }
            }
        }
        // Then check that each key is still ours: one transaction per 64 holds.
        for batch in checks.chunks(TXN_MAX_OPS) {
            let ops: Vec<TxnOp> = batch
                .iter()
                .map(|(_, h)| TxnOp::check_session(&h.kv_key, &h.session.id))
                .collect();
            match self.api().txn(&ops).await {
                Ok(TxnOutcome::Applied(_)) => {}
                Ok(TxnOutcome::RolledBack(errors)) => {
                    // Consul reports every failing operation of a rolled-back
                    // transaction, so the others are still ours.
                    for (op, _) in &errors {
                        if let Some((i, h)) = batch.get(*op) {
                            h.loss.fire(NOT_OURS);
                            out[*i] = Err(LockError::lost(&renewals[*i].key, NOT_OURS));
                        }
                    }
                }
                Err(e) => {
                    for (i, _) in batch {
                        if out[*i].is_ok() {
                            out[*i] = Err(LockError::Connection {
                                driver: NAME,
                                message: e.to_string(),
                                source: None,
                            });
                        }
                    }
                }
            }
        }
        for (i, h) in &checks {
            if h.loss.is_fired() && out[*i].is_ok() {
                out[*i] = Err(LockError::lost(
                    &renewals[*i].key,
                    h.loss.reason().unwrap_or_default(),
                ));
            }
        }
        out
    }
}
