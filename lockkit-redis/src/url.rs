//! Parsing `redis://`, `rediss://`, `redis-cluster://` and `redis-sentinel://` URLs into
//! [`RedisOptions`], and the options Redlock's URL shares with them.

use std::time::Duration;

use lockkit_core::tls::TlsPaths;
use lockkit_core::url::{
    ParsedUrl, PrefixRule, Query, Server, Timeouts, host_port, redact_urls_in, reencoded_userinfo,
};
use lockkit_core::{LockError, redact_url};

use crate::eviction::take_eviction;
use crate::keys::KeyLayout;
use crate::options::{FenceSeed, RedisOptions, SentinelTarget, Topology, WakeMode};
use crate::replicas::take_replica_ack;
use crate::tls;

/// The URL schemes the single-server, Cluster and Sentinel driver takes.
pub(crate) const SCHEMES: &[&str] = &[
    "redis",
    "rediss",
    "redis-cluster",
    "rediss-cluster",
    "redis-sentinel",
    "rediss-sentinel",
];

/// The key prefix when the URL gives none.
pub(crate) const DEFAULT_PREFIX: &str = "lockkit";

/// `prefix=NAME`: part of every key, around the hash tag lockkit writes itself,
/// so it may not contain braces.
pub(crate) fn take_prefix(query: &mut Query) -> Result<String, LockError> {
    query.take_prefix(DEFAULT_PREFIX, PrefixRule::NoBraces)
}

/// `wake=notify|poll` (default `notify`).
pub(crate) fn take_wake(query: &mut Query) -> Result<WakeMode, LockError> {
    Ok(query
        .take_choice(
            "wake",
            &[("notify", WakeMode::Notify), ("poll", WakeMode::Poll)],
        )?
        .unwrap_or(WakeMode::Notify))
}

/// `fence_seed=counter|clock` (default `counter`).
pub(crate) fn take_fence_seed(query: &mut Query) -> Result<FenceSeed, LockError> {
    Ok(query
        .take_choice(
            "fence_seed",
            &[("counter", FenceSeed::Counter), ("clock", FenceSeed::Clock)],
        )?
        .unwrap_or_default())
}

/// `keys=tagged|plain` (default `tagged`; see [`KeyLayout`]).
pub(crate) fn take_keys(query: &mut Query) -> Result<KeyLayout, LockError> {
    Ok(query
        .take_choice(
            "keys",
            &[("tagged", KeyLayout::Tagged), ("plain", KeyLayout::Plain)],
        )?
        .unwrap_or_default())
}

/// The options the redis crate reads from a node URL, passed on as written.
const CLIENT_OPTIONS: &[&str] = &["protocol"];

/// How long connecting, and each command, may take by default.
/// Why a Redis Cluster (`what`: the URL's scheme, or the server a `redis://` URL
/// reached) is refused in a build without Redis Cluster, naming the feature that
/// adds it: the text of a [`LockError::Config`].
pub(crate) fn cluster_not_built(what: &str) -> String {
    format!(
        "{what} needs Redis Cluster, which this build of lockkit leaves out: \
         turn on the `redis-cluster` feature of the `lockkit` crate"
    )
}

pub(crate) const DEFAULT_TIMEOUTS: Timeouts =
    Timeouts::new(Duration::from_secs(2), Duration::from_secs(5));

impl RedisOptions {
    /// Parses a Redis URL:
    ///
    /// - `redis://[user:password@]host:port[/db]`, `rediss://…` (TLS): one server. If
    ///   it is a cluster node, the driver detects that and uses the cluster.
    /// - `redis-cluster://[user:password@]host:port[,host:port…]`,
    ///   `rediss-cluster://…`: a Redis Cluster, through these seed nodes.
    ///
    /// The scheme may be written in any case. The path, if any, is the database
    /// index (`/0`; single server only).
    ///
    /// Query options: `prefix=NAME` (key prefix, default `lockkit`; no braces),
    /// `keys=tagged|plain` (see [`KeyLayout`]), `wake=notify|poll` (see [`WakeMode`]), `fence_seed=counter|clock` (see
    /// [`FenceSeed`]), `eviction=refuse|accept` (default `refuse`: a server whose
    /// `maxmemory-policy` is not `noeviction` is refused; `accept` is unsafe, see
    /// [`Eviction`](crate::Eviction)), `connect_timeout_ms=N` (default 2000) and
    /// `request_timeout_ms=N` (each command, default 5000), and the redis crate's
    /// `protocol=resp2|resp3`. Any other option is an
    /// [`InvalidUrl`](LockError::InvalidUrl) that names it: a mistyped safety
    /// option (`fence_sed=clock`) is never silently ignored.
    ///
    /// TLS options (`rediss://` and `rediss-cluster://` only; values are file paths,
    /// `%XX`-escapes decoded, and the files are read now):
    ///
    /// - `tls_ca=PATH`: a PEM bundle of the CA certificates to verify the server
    ///   with — and only those. Without it, the system's root certificates are used.
    /// - `tls_cert=PATH&tls_key=PATH`: a PEM client certificate (chain) and its
    ///   private key, for servers that require one (mutual TLS). Both or neither.
    ///
    /// The server's certificate must name the host of the URL (e.g. `IP:127.0.0.1`
    /// for `rediss://127.0.0.1:6380`). The same certificates are used for every node
    /// of a cluster and for the wake-up connection.
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidUrl`] naming what is wrong (the password redacted), also
    /// for `tls_*` options on a plain `redis://` URL; [`LockError::Config`] naming
    /// the option and the path for a TLS file that cannot be read or is not PEM.
    pub fn from_url(url: &str) -> Result<Self, LockError> {
        let mut parsed = ParsedUrl::parse(
            url,
            SCHEMES,
            "redis://host:6379, redis-cluster://host:port,host:port or \
             redis-sentinel://host:26379,host:26379/MASTER_NAME",
        )?;
        let (node_scheme, topology) = match parsed.scheme() {
            "redis" => ("redis", Topology::Detect),
            "rediss" => ("rediss", Topology::Detect),
            "redis-cluster" => ("redis", Topology::Cluster),
            "rediss-cluster" => ("rediss", Topology::Cluster),
            "redis-sentinel" => ("redis", Topology::Sentinel),
            _ => ("rediss", Topology::Sentinel),
        };
        let scheme = parsed.scheme().to_string();
        if topology == Topology::Cluster && !cfg!(feature = "cluster") {
            return Err(LockError::Config(cluster_not_built(&format!(
                "{scheme}://"
            ))));
        }
        let server = parsed.server()?;
        let query = &mut parsed.query;
        let prefix = take_prefix(query)?;
        let keys = take_keys(query)?;
        let wake = take_wake(query)?;
        let fence_seed = take_fence_seed(query)?;
        let eviction = take_eviction(query)?;
        let replica_ack = take_replica_ack(query)?;
        let timeouts = query.take_timeouts(DEFAULT_TIMEOUTS)?;
        let tls_paths = TlsPaths::from_query(query)?;
        let passthrough = parsed.query.finish_passing(CLIENT_OPTIONS)?;
        let tls = tls::load(
            tls_paths,
            url,
            &scheme,
            node_scheme == "rediss",
            "rediss:// (or rediss-cluster://) instead of redis://",
        )?;
        let bad = |why: &str| LockError::invalid_url(url, why);
        let query = if passthrough.is_empty() {
            String::new()
        } else {
            format!("?{}", passthrough.join("&"))
        };
        // Re-encoded for redis-rs's parser: a password written with an
        // unescaped `/` or `@` reaches the server whole.
        let userinfo = match server.userinfo {
            Some(u) => format!("{}@", reencoded_userinfo(u).map_err(bad)?),
            None => String::new(),
        };
        let (nodes, sentinel) = if topology == Topology::Sentinel {
            let (nodes, target) = sentinel_nodes(&server, node_scheme, &userinfo, query, &bad)?;
            (nodes, Some(target))
        } else {
            let nodes = data_nodes(&server, topology, node_scheme, &userinfo, &query, &bad)?;
            (nodes, None)
        };
        for node in &nodes {
            tls::client(node, tls.as_ref())
                .map_err(|e| LockError::invalid_url(url, redact_urls_in(&e.to_string())))?;
        }
        Ok(Self {
            nodes,
            topology,
            sentinel,
            prefix,
            keys,
            wake,
            fence_seed,
            eviction,
            replica_ack,
            tls,
            timeouts,
            shown: redact_url(url),
        })
    }
}

/// The sentinels' URLs and what the URL names besides them: the master (the
/// path), and the data nodes' credentials and client options (the sentinels are
/// asked without them).
fn sentinel_nodes(
    server: &Server<'_>,
    node_scheme: &str,
    userinfo: &str,
    query: String,
    bad: &dyn Fn(&str) -> LockError,
) -> Result<(Vec<String>, SentinelTarget), LockError> {
    let master = server.path.trim_matches('/');
    if master.is_empty() || master.contains('/') {
        return Err(bad(
            "the path is the master's name, as the sentinels monitor it \
             (redis-sentinel://host:26379,host:26379/mymaster)",
        ));
    }
    for h in server.host_list() {
        host_port(h, "a sentinel listens on 26379").map_err(|why| bad(&why))?;
    }
    let nodes = server
        .host_list()
        .map(|h| format!("{node_scheme}://{h}"))
        .collect();
    let target = SentinelTarget {
        master: master.to_owned(),
        node_prefix: format!("{node_scheme}://{userinfo}"),
        node_suffix: query,
    };
    Ok((nodes, target))
}

/// The URL of the server, or of each cluster seed, with the credentials, the
/// database (single server only) and the client options.
fn data_nodes(
    server: &Server<'_>,
    topology: Topology,
    node_scheme: &str,
    userinfo: &str,
    query: &str,
    bad: &dyn Fn(&str) -> LockError,
) -> Result<Vec<String>, LockError> {
    let db = match server.path.trim_end_matches('/') {
        "" => "",
        path => {
            let index = &path[1..];
            if index.parse::<u32>().is_err() {
                return Err(bad(
                    "the path is the database index, a whole number (redis://host:6379/0)",
                ));
            }
            path
        }
    };
    for h in server.host_list() {
        host_port(h, "Redis listens on 6379").map_err(|why| bad(&why))?;
    }
    if topology == Topology::Cluster {
        if !db.is_empty() {
            return Err(bad("a cluster has only database 0: remove the /db path"));
        }
        return Ok(server
            .host_list()
            .map(|h| format!("{node_scheme}://{userinfo}{h}{query}"))
            .collect());
    }
    if server.hosts.contains(',') {
        return Err(bad(
            "several hosts: use redis-cluster:// for a cluster or redlock:// for Redlock",
        ));
    }
    Ok(vec![format!(
        "{node_scheme}://{userinfo}{}{db}{query}",
        server.hosts
    )])
}

#[cfg(test)]
mod tests;
