//! Drivers on the application's own redis-rs client: [`RedisDriver::from_client`]
//! and [`RedisDriver::from_cluster_client`].

use lockkit_core::{LockError, Result};
#[cfg(feature = "cluster")]
use redis::cluster::ClusterClient;

use crate::connection::{Conn, Link, server_name};
use crate::driver::{NAME, RedisDriver};
use crate::error::connect_error;
use crate::options::{RedisOptions, WakeMode};

impl RedisDriver {
    /// The driver on the application's `redis::Client` for a single server: its
    /// address, credentials, database and TLS settings are the client's. Only
    /// `options`' lockkit settings are used (prefix, key layout, wake-ups, fence
    /// seed, timeouts).
    ///
    /// The driver opens its own connections from the client (a `redis::Client`
    /// holds no connection): one for commands, reconnecting, and one for its
    /// wake channel. They close with the driver; the client is untouched.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use lockkit::Locker;
    /// use lockkit::redis::{RedisDriver, RedisOptions};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = redis::Client::open("redis://127.0.0.1:6379")?;
    /// let options = RedisOptions::default().with_prefix("app")?;
    /// let locks = Locker::new(Arc::new(RedisDriver::from_client(client, options).await?));
    /// locks.lock("orders").await?.release().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`LockError::Connection`] if the server cannot be reached;
    /// [`LockError::Config`] if it is a cluster node (use
    /// [`from_cluster_client`](Self::from_cluster_client)), refuses the
    /// client's credentials, or its `maxmemory-policy` is not `noeviction` (see
    /// [`Eviction`](crate::Eviction); `options.with_eviction`).
    pub async fn from_client(client: redis::Client, options: RedisOptions) -> Result<Self> {
        let server = server_name(&client);
        let (conn, cluster_node) = Conn::single(client.clone(), &options)
            .await
            .map_err(|e| connect_error(e, &options))?;
        if cluster_node {
            return Err(LockError::Config(format!(
                "{NAME}: the client's server is a Redis Cluster node: \
                 build the driver with RedisDriver::from_cluster_client"
            )));
        }
        let wake_clients = (options.wake == WakeMode::Notify).then(|| vec![client]);
        let conn = Conn::new(Link::Single(conn), &options, server);
        Self::on(conn, wake_clients, options).await
    }

    /// The driver on the application's `ClusterClient`: its seeds, credentials
    /// and TLS settings are the client's. Only `options`' lockkit settings are
    /// used. With the `cluster` feature (lockkit's `redis-cluster`).
    ///
    /// **Waiters poll** (with backoff, 2 to 50 ms; [`capabilities`] say
    /// [`WakeUp::Poll`](lockkit_core::WakeUp::Poll)): a `ClusterClient` does not
    /// tell which nodes it knows, so the driver cannot open its wake subscription.
    /// Connect by `redis-cluster://` URL for woken waiters.
    ///
    /// The driver opens its own cluster connection from the client; it closes with
    /// the driver, and the client is untouched.
    ///
    /// [`capabilities`]: lockkit_core::LockDriver::capabilities
    ///
    /// # Errors
    ///
    /// [`LockError::Connection`] if no seed answers; [`LockError::Config`] if a
    /// master's `maxmemory-policy` is not `noeviction` (see
    /// [`Eviction`](crate::Eviction)).
    #[cfg(feature = "cluster")]
    pub async fn from_cluster_client(client: ClusterClient, options: RedisOptions) -> Result<Self> {
        let conn = client
            .get_async_connection()
            .await
            .map_err(|e| connect_error(e, &options))?;
        let conn = Conn::new(Link::Cluster(conn), &options, "the cluster".into());
        Self::on(conn, None, options).await
    }
}
