//! [`Conn`]: a single server or a cluster, behind one `ConnectionLike`, so every
//! script call is written once; and the eviction check before its requests.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
#[cfg(feature = "cluster")]
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

use crate::eviction::{self, Checked};
use crate::options::{RedisOptions, Topology};
use crate::sentinel::SentinelConn;
use crate::tls;

/// A [`Link`] whose servers' eviction policy is checked before the first request,
/// after any error that may mean it reconnected, and every
/// [`RECHECK`](eviction::RECHECK) (see [`eviction`]): a refusal fails the request
/// instead.
#[derive(Debug, Clone)]
pub(crate) struct Conn {
    link: Link,
    checked: Arc<Checked>,
    /// The server, as a refusal names it (on a cluster, each master is named by
    /// its address instead).
    server: Arc<str>,
}

/// A connection to a single server (reconnecting) or to a cluster (routing by
/// slot, following MOVED/ASK redirects and refreshing its slot map).
#[derive(Clone)]
pub(crate) enum Link {
    Single(ConnectionManager),
    #[cfg(feature = "cluster")]
    Cluster(ClusterConnection),
    /// The master of a Sentinel-watched group, followed across failovers.
    Sentinel(SentinelConn),
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Link::Single(_) => "Link::Single",
            #[cfg(feature = "cluster")]
            Link::Cluster(_) => "Link::Cluster",
            Link::Sentinel(_) => "Link::Sentinel",
        })
    }
}

impl Conn {
    /// `link`, checked as `options.eviction` says; `server` names it in a refusal.
    pub(crate) fn new(link: Link, options: &RedisOptions, server: String) -> Self {
        Self {
            link,
            checked: Arc::new(Checked::new(options.eviction)),
            server: server.into(),
        }
    }

    /// The Sentinel connection, if this is one.
    pub(crate) fn sentinel(&self) -> Option<&SentinelConn> {
        match &self.link {
            Link::Sentinel(s) => Some(s),
            _ => None,
        }
    }

    /// Checks the eviction policy if it is due (see [`Checked::ensure`]).
    async fn checked(&mut self) -> redis::RedisResult<()> {
        let Conn {
            link,
            checked,
            server,
        } = self;
        let check = async move {
            match link {
                #[cfg(feature = "cluster")]
                Link::Cluster(c) => eviction::check_cluster(c).await,
                link => eviction::check_server(link, server).await,
            }
        };
        checked.ensure(check).await
    }

    /// Connects as `options` say; a `redis://` URL that reaches a cluster node
    /// switches to the cluster, with that node as the seed.
    pub(crate) async fn connect(options: &RedisOptions) -> redis::RedisResult<Self> {
        if let Some(target) = &options.sentinel {
            let link = Link::Sentinel(SentinelConn::connect(options, target).await?);
            let server = format!("the Sentinel master `{}`", target.master);
            return Ok(Conn::new(link, options, server));
        }
        if options.topology == Topology::Detect
            && let Some(node) = options.nodes.first()
        {
            let client = tls::client(node, options.tls.as_ref())?;
            let server = server_name(&client);
            let (conn, cluster_node) = Self::single(client, options).await?;
            if !cluster_node {
                return Ok(Conn::new(Link::Single(conn), options, server));
            }
            if !cfg!(feature = "cluster") {
                let why = format!("{server}, a Redis Cluster node,");
                return Err(eviction::refuse(crate::url::cluster_not_built(&why)));
            }
            tracing::debug!("the server is a cluster node: using the cluster");
        }
        Self::cluster(options).await
    }

    /// A connection to the cluster `options`' nodes seed.
    #[cfg(feature = "cluster")]
    async fn cluster(options: &RedisOptions) -> redis::RedisResult<Self> {
        let builder =
            redis::cluster::ClusterClientBuilder::new(options.nodes.iter().map(String::as_str))
                .connection_timeout(options.timeouts.connect)
                .response_timeout(options.timeouts.request)
                .retries(3);
        if options.nodes.iter().any(|n| n.starts_with("rediss://")) {
            tls::install_crypto_provider();
        }
        let cluster = tls::with_certs(builder, options.tls.as_ref()).build()?;
        let link = Link::Cluster(cluster.get_async_connection().await?);
        Ok(Conn::new(link, options, "the cluster".into()))
    }

    /// A build without Redis Cluster refuses cluster URLs when they are parsed;
    /// should options reach here anyway, the refusal is an error, not a panic.
    #[cfg(not(feature = "cluster"))]
    async fn cluster(_: &RedisOptions) -> redis::RedisResult<Self> {
        Err(eviction::refuse(crate::url::cluster_not_built(
            "redis-cluster://",
        )))
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
        #[cfg(feature = "cluster")]
        return matches!(self.link, Link::Cluster(_));
        #[cfg(not(feature = "cluster"))]
        false
    }
}

/// `Redis at host:port`, for a refusal.
pub(crate) fn server_name(client: &redis::Client) -> String {
    format!("Redis at {}", client.get_connection_info().addr())
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            self.checked().await?;
            let reply = self.link.req_packed_command(cmd).await;
            if let Err(e) = &reply {
                self.checked.after_error(e);
            }
            reply
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            self.checked().await?;
            let reply = self.link.req_packed_commands(pipeline, offset, count).await;
            if let Err(e) = &reply {
                self.checked.after_error(e);
            }
            reply
        })
    }

    fn get_db(&self) -> i64 {
        self.link.get_db()
    }
}

impl ConnectionLike for Link {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Link::Single(c) => c.req_packed_command(cmd),
            #[cfg(feature = "cluster")]
            Link::Cluster(c) => c.req_packed_command(cmd),
            Link::Sentinel(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Link::Single(c) => c.req_packed_commands(pipeline, offset, count),
            #[cfg(feature = "cluster")]
            Link::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
            Link::Sentinel(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Link::Single(c) => c.get_db(),
            #[cfg(feature = "cluster")]
            Link::Cluster(c) => c.get_db(),
            Link::Sentinel(c) => c.get_db(),
        }
    }
}
