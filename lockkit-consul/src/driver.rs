//! [`ConsulDriver`]: the [`LockDriver`] contract over the lock recipe
//! (`acquire.rs`), the semaphore recipe (`permit.rs`, `permit_release.rs`),
//! renewal (`renew.rs`) and inspection (`inspect.rs`), with the driver's sessions.

use std::time::Duration;

use async_trait::async_trait;
use lockkit_core::driver::Contention;
use lockkit_core::driver::{ChangeSignal, Inspect, Inspection, refuse_reentry};
use lockkit_core::{
    AcquireRequest, Capabilities, LockDriver, LockKey, LockMode, OwnerId, Renewal, Result, WakeUp,
};
use tokio::time::Instant;

use crate::acquire::Contending;
use crate::api::Api;
use crate::holds::Holds;
use crate::keys::SemaphoreKeys;
use crate::options::ConsulOptions;
use crate::permit::PermitContending;
use crate::permit_release::{force_release_permits, give_back, leave};
use crate::session::Sessions;
use crate::txn_ops::TxnOp;

/// The driver's name in errors and capabilities.
pub(crate) const NAME: &str = "consul";

/// The Consul driver. See the [crate docs](crate) for what it does and guarantees.
#[derive(Debug)]
pub struct ConsulDriver {
    pub(crate) sessions: Sessions,
    pub(crate) holds: Holds,
    prefix: String,
}

impl ConsulDriver {
    /// Connects: checks that the agent answers and knows a leader, and creates the
    /// session.
    ///
    /// # Errors
    ///
    /// [`LockError::Connection`](lockkit_core::LockError::Connection) when the
    /// agent cannot be reached, [`LockError::Config`](lockkit_core::LockError::Config)
    /// for a refused ACL token or session settings.
    pub async fn connect(options: ConsulOptions) -> Result<Self> {
        let tls_at = options.base.strip_prefix("https://").map(str::to_owned);
        match Self::on(Api::new(&options)?, options).await {
            Err(e) => Err(match tls_at {
                #[cfg(feature = "tls")]
                Some(at) => {
                    let get = b"GET /v1/status/leader HTTP/1.0\r\n\r\n";
                    lockkit_core::tls::hint_if_plain(e, &at, get, "consul").await
                }
                _ => e,
            }),
            connected => connected,
        }
    }

    /// The driver through the application's `reqwest::Client`: `options` (from a
    /// `consul://` URL) give the agent's address, ACL token and datacenter; the
    /// client's own settings (TLS, proxy, connection pool) are used as they are,
    /// and the URL's `tls_*` files are not. Every request carries the URL's
    /// request timeout (a blocking query: its wait, plus that).
    ///
    /// The driver only sends requests through the client; it never closes it.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use lockkit::Locker;
    /// use lockkit::consul::{ConsulDriver, ConsulOptions};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let http = reqwest::Client::new();
    /// let options = ConsulOptions::from_url("consul://127.0.0.1:8500?prefix=app")?;
    /// let locks = Locker::new(Arc::new(ConsulDriver::from_client(http, options).await?));
    /// locks.lock("orders").await?.release().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`connect`](Self::connect).
    pub async fn from_client(http: reqwest::Client, options: ConsulOptions) -> Result<Self> {
        Self::on(Api::with_http(http, &options), options).await
    }

    /// The driver on `api`: checks that the agent answers and knows a leader,
    /// and creates the session.
    async fn on(api: Api, options: ConsulOptions) -> Result<Self> {
        let agent = format!("the Consul agent ({options})");
        (options.timeouts)
            .connecting(crate::driver::NAME, &agent, api.leader())
            .await?;
        let prefix = options.prefix.clone();
        let driver = Self {
            sessions: Sessions::new(api, options),
            holds: Holds::default(),
            prefix,
        };
        driver.sessions.get().await?;
        Ok(driver)
    }

    pub(crate) fn api(&self) -> &Api {
        self.sessions.api()
    }

    /// The KV prefix every lock lives under.
    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The KV key lock `key` lives at (see [`crate::keys`]).
    pub(crate) fn kv_key(&self, key: &LockKey) -> String {
        crate::keys::kv_key(&self.prefix, key)
    }
}

#[async_trait]
impl LockDriver for ConsulDriver {
    fn name(&self) -> &'static str {
        NAME
    }

    /// Exclusive locks and permits, session-bound, inspected (holders), woken by
    /// blocking queries. Shared (read) holds are refused: Consul documents a lock
    /// and a semaphore recipe, and no reader/writer one (see the crate docs).
    fn capabilities(&self) -> Capabilities {
        Capabilities::baseline()
            .with_lease_expiry(false)
            .with_wake_up(WakeUp::Notify)
            .with_permits(true)
            .with_inspect(Inspect::Holders)
            .with_list(true)
            .with_watch(true)
    }

    async fn contend<'a>(&'a self, req: &'a AcquireRequest) -> Result<Contention<'a>> {
        if let Some(held) = self.holds.get(&req.key, &req.owner) {
            if !held.loss.is_fired() && !held.session.is_gone() {
                if held.mode != req.mode {
                    return Err(refuse_reentry(NAME, req, held.mode));
                }
                return Ok(Contention::granted(held.grant(req)));
            }
            // A hold that was lost: forget it (and leave its semaphore) first.
            if held.mode.limit().is_some() {
                let _ = self.release(&req.key, &req.owner).await;
            } else {
                self.holds.remove(&req.key, &req.owner);
            }
        }
        Ok(match req.mode {
            LockMode::Permit { limit } => PermitContending::new(self, req, limit).contention(),
            _ => Contending::new(self, req).contention(),
        })
    }

    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant> {
        self.check_one(key, owner, ttl).await
    }

    async fn extend_many(&self, renewals: &[Renewal]) -> Vec<Result<Instant>> {
        self.renew_round(renewals).await
    }

    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        let Some(held) = self.holds.take(key, owner) else {
            return self.release_unrecorded(key, owner).await;
        };
        if held.mode.limit().is_some() {
            let keys = SemaphoreKeys::of(&self.kv_key(key));
            let left = match leave(self.api(), &keys, &held.session.id).await {
                Ok(left) => left,
                Err(e) => {
                    // Keep the hold on record, so that the release can be tried
                    // again: nothing else would find the permit to free it.
                    self.holds.insert(key.clone(), owner.clone(), held);
                    return Err(e);
                }
            };
            give_back(self.api(), &self.sessions.permits, key, &held.session.id);
            return Ok(left);
        }
        // Deleting at the acquiring write's index: only our hold, and it wakes
        // every blocking query on the key.
        let deleted = self.api().delete_at(&held.kv_key, held.token.get()).await;
        self.holds.unclaim(key, owner);
        deleted
    }

    async fn inspect(&self, key: &LockKey) -> Result<Inspection> {
        crate::inspect::inspect(self, key).await
    }

    async fn watch(&self, key: &LockKey) -> Result<ChangeSignal> {
        crate::observe::watch(self, key).await
    }

    async fn list(&self, prefix: &str, limit: usize) -> Result<Vec<LockKey>> {
        crate::list::list(self, prefix, limit).await
    }

    /// Deletes the lock key if a session holds it, and frees every slot of the
    /// semaphore of the same name.
    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        let kv_key = self.kv_key(key);
        let (entry, _) = self.api().kv_get(&kv_key, None).await?;
        let lock = match entry {
            Some(e) if e.session.is_some() => self.api().delete_at(&kv_key, e.modify_index).await?,
            _ => false,
        };
        let permits = force_release_permits(self.api(), &SemaphoreKeys::of(&kv_key)).await?;
        Ok(lock || permits)
    }

    /// Deletes the key and everything of the semaphore of the same name, whoever
    /// holds them. Tokens are Consul's raft indexes: nothing else is left.
    async fn purge(&self, key: &LockKey) -> Result<()> {
        let kv_key = self.kv_key(key);
        let prefix = SemaphoreKeys::of(&kv_key).prefix;
        let ops = [TxnOp::delete(&kv_key), TxnOp::delete_tree(&prefix)];
        self.api().txn(&ops).await.map(|_| ())
    }
}
