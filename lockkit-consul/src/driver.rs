//! [`ConsulDriver`]: the [`LockDriver`] contract over the acquire recipe
//! (`acquire.rs`) and renewal (`renew.rs`), with the driver's session.

use std::time::Duration;

use async_trait::async_trait;
use lockkit_core::{
    AcquireRequest, Capabilities, Grant, LockDriver, LockKey, OwnerId, Renewal, Result, WakeUp,
};
use tokio::time::Instant;

use crate::acquire::Contending;
use crate::api::{Api, TxnOp};
use crate::holds::Holds;
use crate::options::ConsulOptions;
use crate::session::Sessions;

/// The driver's name in errors and capabilities.
pub(crate) const NAME: &str = lockkit_core::driver::registry::CONSUL.name;

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
        let api = Api::new(&options)?;
        api.leader().await?;
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

    /// The KV key lock `key` lives at (see [`kv_key`]).
    pub(crate) fn kv_key(&self, key: &LockKey) -> String {
        kv_key(&self.prefix, key)
    }
}

/// The KV key lock `key` lives at under `prefix`: `<prefix>/<key>`, with every
/// byte of the key outside `A-Z a-z 0-9 - .` written `_XX` (hex), so any lock name
/// is one key segment of the characters every Consul version accepts.
pub(crate) fn kv_key(prefix: &str, key: &LockKey) -> String {
    let mut out = format!("{prefix}/");
    for b in key.as_str().bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.') {
            out.push(b as char);
        } else {
            out.push_str(&format!("_{b:02X}"));
        }
    }
    out
}

#[async_trait]
impl LockDriver for ConsulDriver {
    fn name(&self) -> &'static str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::baseline()
            .with_lease_expiry(false)
            .with_wake_up(WakeUp::Notify)
    }

    async fn acquire(&self, req: &AcquireRequest) -> Result<Grant> {
        req.require_mode(NAME, self.capabilities())?;
        if let Some(held) = self.holds.get(&req.key, &req.owner) {
            if !held.loss.is_fired() && !held.session.is_gone() {
                return Ok(held.grant(req));
            }
            self.holds.remove(&req.key, &req.owner);
        }
        Contending::new(self, req).wait().await
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
        self.api().txn(&[TxnOp::delete(&kv_key)]).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every lock name is one KV segment of characters every Consul accepts.
    #[test]
    fn lock_names_become_one_safe_kv_segment() {
        let k = |s: &str| kv_key("lockkit", &LockKey::new(s).unwrap());
        assert_eq!(k("inventory/sku_42"), "lockkit/inventory_2Fsku_5F42");
        assert_eq!(k("a-b.c"), "lockkit/a-b.c");
        assert_eq!(k("é"), "lockkit/_C3_A9");
    }
}
