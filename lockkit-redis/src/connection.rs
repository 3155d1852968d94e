//! [`Conn`]: a single server or a cluster, behind one `ConnectionLike`, so every
//! script call is written once.

use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

use crate::options::{RedisOptions, Topology};
use crate::sentinel::SentinelConn;
use crate::tls;

/// A connection to a single server (reconnecting) or to a cluster (routing by
/// slot, following MOVED/ASK redirects and refreshing its slot map).
#[derive(Clone)]
pub(crate) enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
    /// The master of a Sentinel-watched group, followed across failovers.
    Sentinel(SentinelConn),
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Conn::Single(_) => "Conn::Single",
            Conn::Cluster(_) => "Conn::Cluster",
            Conn::Sentinel(_) => "Conn::Sentinel",
        })
    }
}

impl Conn {
    /// Connects as `options` say; a `redis://` URL that reaches a cluster node
    /// switches to the cluster, with that node as the seed.
    pub(crate) async fn connect(options: &RedisOptions) -> redis::RedisResult<Self> {
        if let Some(target) = &options.sentinel {
            return Ok(Conn::Sentinel(
                SentinelConn::connect(options, target).await?,
            ));
        }
        if options.topology == Topology::Detect
            && let Some(node) = options.nodes.first()
        {
            let client = tls::client(node, options.tls.as_ref())?;
            let (conn, cluster_node) = Self::single(client, options).await?;
            if !cluster_node {
                return Ok(Conn::Single(conn));
            }
            tracing::debug!("the server is a cluster node: using the cluster");
        }
        let mut builder = ClusterClientBuilder::new(options.nodes.iter().map(String::as_str))
            .connection_timeout(options.timeouts.connect)
            .response_timeout(options.timeouts.request)
            .retries(3);
        if options.nodes.iter().any(|n| n.starts_with("rediss://")) {
            tls::install_crypto_provider();
        }
        if let Some(certs) = &options.tls {
            builder = builder.certs(certs.clone());
        }
        let cluster = builder.build()?;
        Ok(Conn::Cluster(cluster.get_async_connection().await?))
    }

    /// A reconnecting connection to the server `client` names, and whether that
    /// server is a cluster node.
    pub(crate) async fn single(
        client: redis::Client,
        options: &RedisOptions,
    ) -> redis::RedisResult<(ConnectionManager, bool)> {
        // Bounded: a dead server is reported within seconds, not after a long
        // backoff; later reconnects happen on use.
        let config = ConnectionManagerConfig::new()
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_millis(500))
            .set_connection_timeout(Some(options.timeouts.connect))
            .set_response_timeout(Some(options.timeouts.request));
        let mut conn = ConnectionManager::new_with_config(client, config).await?;
        let info: String = redis::cmd("INFO")
            .arg("cluster")
            .query_async(&mut conn)
            .await?;
        Ok((conn, info.contains("cluster_enabled:1")))
    }

    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self, Conn::Cluster(_))
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
            Conn::Sentinel(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Sentinel(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
            Conn::Sentinel(c) => c.get_db(),
        }
    }
}
