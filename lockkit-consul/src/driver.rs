//! [`ConsulDriver`]: KV acquire with the driver's session, blocking queries to wait.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use lockkit_core::{
    AcquireRequest, Capabilities, FencingToken, Grant, LockDriver, LockError, LockKey, LossSignal,
    OwnerId, Renewal, Result, WakeUp,
};
use tokio::time::Instant;

use crate::api::{Api, DRIVER, TxnOp, TxnOutcome};
use crate::contender::Contending;
use crate::holds::{Held, Holds};
use crate::options::ConsulOptions;
use crate::session::{Session, Sessions};

/// How many operations Consul takes in one transaction.
const TXN_MAX_OPS: usize = 64;
/// Why a hold whose `check-session` failed is lost.
const NOT_OURS: &str = "the lock key is no longer held by our session";

/// The Consul driver. See the [crate docs](crate) for what it does and guarantees.
#[derive(Debug)]
pub struct ConsulDriver {
    pub(crate) sessions: Sessions,
    pub(crate) holds: Arc<Holds>,
    prefix: String,
}

/// Why a lock attempt did not take the key.
pub(crate) enum Refused {
    /// Another session (or another owner of this driver) holds it; block on the
    /// key from this index.
    Held(u64),
    /// Free, but Consul refuses it: the lock-delay of an invalidated holder.
    Delayed,
    /// Our session is gone: make a new one.
    SessionGone,
}

impl ConsulDriver {
    /// Connects: checks that the agent answers and knows a leader, and creates the
    /// session.
    ///
    /// # Errors
    ///
    /// [`LockError::Connection`] when the agent cannot be reached,
    /// [`LockError::Config`] for a refused ACL token or session settings.
    pub async fn connect(options: ConsulOptions) -> Result<Self> {
        let api = Api::new(&options)?;
        api.leader().await?;
        let holds = Arc::new(Holds::default());
        let prefix = options.prefix.clone();
        let driver = Self {
            sessions: Sessions::new(api, options, Arc::downgrade(&holds)),
            holds,
            prefix,
        };
        driver.sessions.get().await?;
        Ok(driver)
    }

    pub(crate) fn api(&self) -> &Api {
        self.sessions.api()
    }

    /// The KV key lock `key` lives at: `<prefix>/<key>`, with every byte of the key
    /// outside `A-Z a-z 0-9 - .` written `_XX` (hex), so any lock name is one key
    /// segment of the characters every Consul version accepts.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn demo(d: lockkit::consul::ConsulDriver) -> Result<(), lockkit::LockError> {
    /// let key = lockkit::LockKey::new("inventory/sku_42")?;
    /// assert_eq!(d.kv_key(&key), "lockkit/inventory_2Fsku_5F42");
    /// # Ok(()) }
    /// ```
    pub fn kv_key(&self, key: &LockKey) -> String {
        let mut out = format!("{}/", self.prefix);
        for b in key.as_str().bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.') {
                out.push(b as char);
            } else {
                out.push_str(&format!("_{b:02X}"));
            }
        }
        out
    }

    /// Our live hold, as far as this side knows.
    fn live_hold(&self, key: &LockKey, owner: &OwnerId) -> Result<Held> {
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

    /// One attempt: the lock and its token in one transaction.
    pub(crate) async fn try_once(
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
                        driver: DRIVER,
                        message: "a lock transaction returned no entry".into(),
                        source: None,
                    });
                };
                let held = Held {
                    kv_key: kv_key.to_string(),
                    token: FencingToken(entry.modify_index),
                    session: session.clone(),
                    loss: LossSignal::new(),
                };
                self.holds
                    .insert(req.key.clone(), req.owner.clone(), held.clone());
                if session.is_gone() {
                    held.loss
                        .fire("the Consul session ended while the lock was granted");
                }
                Ok(Ok(grant_of(req, &held)))
            }
            TxnOutcome::RolledBack(errors) => {
                self.holds.unclaim(&req.key, &req.owner);
                if errors
                    .iter()
                    .any(|(_, what)| what.contains("invalid session"))
                {
                    self.sessions
                        .end(session, "Consul says the session is invalid");
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
    async fn release_unrecorded(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
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

pub(crate) fn grant_of(req: &AcquireRequest, held: &Held) -> Grant {
    // The key lives as long as the session; the deadline is the client-side lease
    // the watchdog pushes out while the session is renewed and the key is ours.
    Grant::of(req, held.token, Instant::now() + req.ttl).with_loss_signal(held.loss.clone())
}

#[async_trait]
impl LockDriver for ConsulDriver {
    fn name(&self) -> &'static str {
        DRIVER
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::baseline()
            .with_lease_expiry(false)
            .with_wake_up(WakeUp::Notify)
    }

    async fn acquire(&self, req: &AcquireRequest) -> Result<Grant> {
        req.require_mode(DRIVER, self.capabilities())?;
        if let Some(held) = self.holds.get(&req.key, &req.owner) {
            if !held.loss.is_fired() && !held.session.is_gone() {
                return Ok(grant_of(req, &held));
            }
            self.holds.remove(&req.key, &req.owner);
        }
        Contending::new(self, req).wait().await
    }

    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant> {
        let sent = Instant::now();
        let held = self.live_hold(key, owner)?;
        let ops = [TxnOp::check_session(&held.kv_key, &held.session.id)];
        match self.api().txn(&ops).await? {
            TxnOutcome::Applied(_) => Ok(sent + ttl),
            TxnOutcome::RolledBack(_) => {
                held.loss
                    .fire("the lock key is no longer held by our session");
                Err(LockError::lost(
                    key,
                    "the lock key is no longer held by our session",
                ))
            }
        }
    }

    async fn extend_many(&self, renewals: &[Renewal]) -> Vec<Result<Instant>> {
        let sent = Instant::now();
        let mut out: Vec<Result<Instant>> = Vec::with_capacity(renewals.len());
        let mut checks: Vec<(usize, Held)> = Vec::new();
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
                            driver: DRIVER,
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
                                driver: DRIVER,
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

    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        let Some(held) = self.holds.take(key, owner) else {
            return self.release_unrecorded(key, owner).await;
        };
        // Deleting at the acquiring write's index: only our hold, and it wakes
        // every blocking query on the key.
        let deleted = self.api().delete_at(&held.kv_key, held.token.get()).await;
        self.holds.unclaim(key, owner);
        deleted
    }

    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        let kv_key = self.kv_key(key);
        let (entry, _) = self.api().kv_get(&kv_key, None).await?;
        match entry {
            Some(e) if e.session.is_some() => self.api().delete_at(&kv_key, e.modify_index).await,
            _ => Ok(false),
        }
    }

    /// Deletes the key whoever holds it. Tokens are Consul's raft indexes:
    /// nothing else is left.
    async fn purge(&self, key: &LockKey) -> Result<()> {
        let kv_key = self.kv_key(key);
        self.api()
            .txn(&[crate::api::TxnOp::delete(&kv_key)])
            .await
            .map(|_| ())
    }
}
