//! [`ZkDriver`]: the [`LockDriver`] contract over the queue recipe (`queue.rs`,
//! `contender.rs`), renewal (`renew.rs`) and node cleanup (`cleanup.rs`).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use lockkit_core::driver::Contention;
use lockkit_core::driver::{ChangeSignal, Inspect, Inspection, refuse_reentry};
use lockkit_core::{
    AcquireRequest, Capabilities, Grant, LockDriver, LockKey, LockMode, OwnerId, Renewal, Result,
    WakeUp,
};
use tokio::time::Instant;

use crate::cleanup::delete_in_background;
use crate::contender::Contending;
use crate::holds::Holds;
use crate::options::ZkOptions;
use crate::recipe::Recipe;
use crate::session::Sessions;

/// The driver's name in errors and capabilities.
pub(crate) const NAME: &str = "zk";

/// The ZooKeeper driver. See the [crate docs](crate) for the recipe and what it
/// guarantees.
#[derive(Debug)]
pub struct ZkDriver {
    pub(crate) sessions: Sessions,
    pub(crate) holds: Arc<Holds>,
}

impl ZkDriver {
    /// Connects (opens the first session and creates the root node).
    ///
    /// # Errors
    ///
    /// [`LockError::Connection`](lockkit_core::LockError::Connection) when no
    /// server accepts a session, [`LockError::Config`](lockkit_core::LockError::Config)
    /// for refused credentials.
    pub async fn connect(options: ZkOptions) -> Result<Self> {
        let driver = Self {
            sessions: Sessions::new(options),
            holds: Arc::new(Holds::default()),
        };
        driver.sessions.get().await?;
        Ok(driver)
    }

    /// The driver on the application's `zookeeper_client::Client`: its servers,
    /// credentials, TLS settings and chroot are the client's; `options` give the
    /// rest, with paths under the client's chroot (the options' own chroot, if
    /// any, below it).
    ///
    /// lockkit needs the session's events, and has them from the client's state
    /// watcher: when the connection drops, every hold is signalled lost at once,
    /// as with a session of lockkit's own. The driver uses that one session and
    /// never closes it. When it ends (expired, closed by the application), the
    /// driver opens no other: every later request fails with
    /// [`LockError::Connection`](lockkit_core::LockError::Connection), and the
    /// application builds a new driver on a new client.
    ///
    /// Nodes are created with open ACLs, or creator-only ones when `options`
    /// carry digest credentials (`zk://user:password@…`): then the client must
    /// have added that identity with `Client::auth`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use lockkit::Locker;
    /// use lockkit::zk::{ZkDriver, ZkOptions};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = zookeeper_client::Client::connect("127.0.0.1:2181/app").await?;
    /// let locks = Locker::new(Arc::new(ZkDriver::from_client(client, ZkOptions::default()).await?));
    /// locks.lock("orders").await?.release().await?; // under /app/lockkit
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`LockError::Connection`](lockkit_core::LockError::Connection) if the
    /// client's session is already over, or the root node cannot be created.
    pub async fn from_client(client: zookeeper_client::Client, options: ZkOptions) -> Result<Self> {
        let driver = Self {
            sessions: Sessions::given(options, client),
            holds: Arc::new(Holds::default()),
        };
        driver.sessions.get().await?;
        Ok(driver)
    }

    /// The options this driver was connected with.
    pub fn options(&self) -> &ZkOptions {
        self.sessions.options()
    }

    pub(crate) fn dir(&self, key: &LockKey) -> String {
        let o = self.options();
        o.recipe.dir(&o.root, &o.chroot, key)
    }

    /// A request by an owner this driver already holds for: the same grant,
    /// refreshed (or `None` when there is no live hold to re-enter).
    fn reenter(&self, req: &AcquireRequest) -> Result<Option<Grant>> {
        let mode = req.mode;
        let Some(held) = self.holds.get(&req.key, &req.owner) else {
            return Ok(None);
        };
        if held.loss.is_fired() || held.session.is_over() {
            // A hold signalled lost is never handed out again; forget it and
            // queue afresh (its node, if it survived, is ours to remove).
            self.holds.remove(&req.key, &req.owner);
            delete_in_background(held.session.clone(), held.path.clone());
            return Ok(None);
        }
        match (held.mode, mode) {
            (held_mode, asked) if held_mode == asked => Ok(Some(held.grant(req))),
            // The write hold covers reading.
            (LockMode::Exclusive, LockMode::Shared) => Ok(Some(held.grant(req))),
            (held_mode, _) => Err(refuse_reentry(NAME, req, held_mode)),
        }
    }
}

#[async_trait]
impl LockDriver for ZkDriver {
    fn name(&self) -> &'static str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::baseline()
            .with_shared(self.options().recipe.has_shared())
            .with_permits(self.options().recipe.has_permits())
            .with_inspect(Inspect::HoldersAndWaiters)
            .with_proclaim(true)
            .with_list(self.options().recipe == Recipe::Lockkit)
            .with_watch(true)
            .with_fair(true)
            .with_lease_expiry(false)
            .with_wake_up(WakeUp::Notify)
    }

    async fn contend<'a>(&'a self, req: &'a AcquireRequest) -> Result<Contention<'a>> {
        self.options().recipe.check(&req.key)?;
        if let Some(grant) = self.reenter(req)? {
            return Ok(Contention::granted(grant));
        }
        Ok(Contending::new(self, req).contention())
    }

    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant> {
        // The watchdog's renewals, `extend_many`, check locally and cost nothing.
        self.confirm(key, owner, ttl).await
    }

    async fn extend_many(&self, renewals: &[Renewal]) -> Vec<Result<Instant>> {
        // The session's heartbeat keeps every node alive: a renewal round is a
        // local check that the session is connected and no node was deleted.
        self.check_locally(renewals)
    }

    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        match self.holds.remove(key, owner) {
            Some(held) => self.delete_held(held).await,
            None => self.delete_owned(key, owner).await,
        }
    }

    async fn inspect(&self, key: &LockKey) -> Result<Inspection> {
        self.inspect_queue(key).await
    }

    async fn watch(&self, key: &LockKey) -> Result<ChangeSignal> {
        self.watch_queue(key).await
    }

    async fn list(&self, prefix: &str, limit: usize) -> Result<Vec<LockKey>> {
        self.list_keys(prefix, limit).await
    }

    async fn list_held(&self, prefix: &str, limit: usize) -> Result<Vec<Inspection>> {
        self.list_held_queues(prefix, limit).await
    }

    async fn proclaim(&self, key: &LockKey, owner: &OwnerId, text: &str) -> Result<()> {
        self.proclaim_text(key, owner, text).await
    }

    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        self.delete_holders(key).await
    }

    /// Deletes every node of the key's queue, then the key's container node (the
    /// server would delete it once empty, but only at its next sweep). Tokens are
    /// zxids: nothing else is left.
    async fn purge(&self, key: &LockKey) -> Result<()> {
        self.delete_key(key).await
    }
}
