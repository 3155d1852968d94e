//! [`RedisDriver`]: a single Redis server or a Redis Cluster. Connecting is here;
//! the acquire recipe is in `acquire.rs`, renewals in `renew.rs`.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::driver::Contention;
use lockkit_core::driver::{Inspect, Inspection, WakeUpHealth};
use lockkit_core::{
    AcquireRequest, Capabilities, Grant, LockDriver, LockKey, OwnerId, Renewal, Result, WakeUp,
    async_trait,
};
use tokio::time::Instant;

use crate::call::Call;
use crate::connection::Conn;
use crate::contender::Contending;
use crate::error::{connect_error, redis_error};
use crate::keys::{KeyLayout, Names, names, wake_prefix};
use crate::options::{FenceSeed, RedisOptions, Topology, WakeMode};
use crate::replicas::ReplicaAck;
use crate::scripts::{Scripts, ttl_ms};
use crate::tls;
use crate::wait::{ENTRY_LIFETIME, Subscriptions};

/// The driver's name in messages and errors.
pub(crate) const NAME: &str = "redis";

/// The Redis driver for a single server or a Redis Cluster. See the
/// [crate docs](crate).
#[derive(Debug, Clone)]
pub struct RedisDriver {
    pub(crate) conn: Conn,
    pub(crate) scripts: Arc<Scripts>,
    /// `None` in [`WakeMode::Poll`].
    pub(crate) subs: Option<Arc<Subscriptions>>,
    pub(crate) prefix: Arc<str>,
    /// Where each lock's own key lives.
    pub(crate) keys: KeyLayout,
    pub(crate) wake_prefix: Arc<str>,
    pub(crate) fence_seed: FenceSeed,
    /// `wait_replicas`: `WAIT` after each grant and renewal.
    pub(crate) replica_ack: Option<ReplicaAck>,
}

impl RedisDriver {
    /// Connects (with automatic reconnection; to the cluster if the URL names one
    /// or the server is a cluster node), checks the servers' eviction policy (see
    /// [`Eviction`](crate::Eviction)) and subscribes to this driver's wake channel.
    ///
    /// # Errors
    ///
    /// [`LockError::Connection`](lockkit_core::LockError::Connection) if the server
    /// cannot be reached; [`LockError::Config`](lockkit_core::LockError::Config) if
    /// its `maxmemory-policy` (a cluster's, any master's) is not `noeviction`, or
    /// cannot be read, and the URL does not say `eviction=accept`.
    pub async fn connect(options: RedisOptions) -> Result<Self> {
        let server = format!("Redis ({})", options.shown);
        let connecting = async {
            Conn::connect(&options)
                .await
                .map_err(|e| connect_error(e, &options))
        };
        // A single server's connection manager retries, each attempt with the
        // whole timeout: bounded as one. A cluster client bounds its own connect
        // (every node in parallel, one timeout each); a node that does not answer
        // costs it the whole timeout before it goes on with the others.
        let connected = match options.topology {
            Topology::Cluster => connecting.await,
            _ => options.timeouts.connecting(NAME, &server, connecting).await,
        };
        let conn = match connected {
            Ok(conn) => conn,
            Err(e) => return Err(crate::tls::hint_if_plain(e, &options.nodes, "redis").await),
        };
        let wake_clients = match (options.wake, conn.sentinel()) {
            (WakeMode::Poll, _) => None,
            (WakeMode::Notify, Some(sentinel)) => {
                Some(sentinel.data_clients().await.map_err(redis_error)?)
            }
            (WakeMode::Notify, None) => Some(
                options
                    .nodes
                    .iter()
                    .map(|n| tls::client(n, options.tls.as_ref()))
                    .collect::<redis::RedisResult<Vec<_>>>()
                    .map_err(redis_error)?,
            ),
        };
        Self::on(conn, wake_clients, options).await
    }

    /// The driver on `conn`: loads the scripts and, given `wake_clients`,
    /// subscribes to this driver's wake channel through them (else waiters poll).
    pub(crate) async fn on(
        conn: Conn,
        wake_clients: Option<Vec<redis::Client>>,
        options: RedisOptions,
    ) -> Result<Self> {
        let scripts = Arc::new(Scripts::new());
        // The first requests on `conn`: the eviction policy is checked first.
        let mut loading = conn.clone();
        scripts.load_all(&mut loading).await.map_err(redis_error)?;
        let wake_prefix = wake_prefix(&options.prefix);
        let subs = match wake_clients {
            None => None,
            Some(clients) => Some(
                Subscriptions::connect(
                    clients,
                    &wake_prefix,
                    WakeUpHealth::new(NAME, "pub/sub connection"),
                )
                .await
                .map_err(redis_error)?,
            ),
        };
        Ok(Self {
            conn,
            scripts,
            subs,
            fence_seed: options.fence_seed,
            replica_ack: options.replica_ack,
            prefix: options.prefix.into(),
            keys: options.keys,
            wake_prefix: wake_prefix.into(),
        })
    }

    /// Whether this driver talks to a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        self.conn.is_cluster()
    }

    pub(crate) fn names(&self, key: &LockKey) -> Names {
        names(&self.prefix, self.keys, key)
    }

    /// The wake scripts' last argument: `"1"` on a Cluster, where PUBLISH counts
    /// only the subscribers on the publishing node, so its reply cannot tell a
    /// waiter's driver is gone.
    pub(crate) fn cluster_flag(&self) -> &'static str {
        if self.conn.is_cluster() { "1" } else { "" }
    }
}

#[async_trait]
impl LockDriver for RedisDriver {
    fn name(&self) -> &'static str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        let wake_up = if self.subs.is_some() {
            WakeUp::Notify
        } else {
            WakeUp::Poll
        };
        Capabilities::baseline()
            .with_shared(true)
            .with_permits(true)
            .with_wake_up(wake_up)
            .with_inspect(Inspect::HoldersAndWaiters)
            .with_fair_on_request(true)
            .with_proclaim(true)
            .with_list(!self.is_cluster() && self.keys == KeyLayout::Tagged)
            .with_several_keys_at_once(self.takes_several_at_once())
    }

    async fn try_acquire_all(&self, reqs: &[AcquireRequest]) -> Result<Option<Vec<Grant>>> {
        self.take_all(reqs).await
    }

    async fn contend<'a>(&'a self, req: &'a AcquireRequest) -> Result<Contention<'a>> {
        self.keys.check(&req.key)?;
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
        let mut call = Call::on_keys(&self.scripts.release_hold, &n.all());
        call.arg(owner.to_hex())
            .arg(&*self.wake_prefix)
            .arg(ttl_ms(ENTRY_LIFETIME))
            .arg(self.cluster_flag());
        let mut conn = self.conn.clone();
        let (released, _): (i64, _) = call.invoke(&mut conn, None).await.map_err(redis_error)?;
        Ok(released == 1)
    }

    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        let n = self.names(key);
        let mut invocation = self.scripts.force_release_all.prepare_invoke();
        for key in n.all() {
            invocation.key(key);
        }
        let mut conn = self.conn.clone();
        let deleted: i64 = invocation
            .arg(&*self.wake_prefix)
            .arg(ttl_ms(ENTRY_LIFETIME))
            .arg(self.cluster_flag())
            .invoke_async(&mut conn)
            .await
            .map_err(redis_error)?;
        Ok(deleted == 1)
    }

    async fn inspect(&self, key: &LockKey) -> Result<Inspection> {
        self.inspect_key(key).await
    }

    async fn list(&self, prefix: &str, limit: usize) -> Result<Vec<LockKey>> {
        self.list_keys(prefix, limit).await
    }

    async fn proclaim(&self, key: &LockKey, owner: &OwnerId, text: &str) -> Result<()> {
        self.proclaim_text(key, owner, text).await
    }

    async fn purge(&self, key: &LockKey) -> Result<()> {
        let n = self.names(key);
        let mut conn = self.conn.clone();
        // One slot: they all share the key's hash tag.
        redis::cmd("DEL")
            .arg(&n.all()[..])
            .exec_async(&mut conn)
            .await
            .map_err(redis_error)
    }
}
