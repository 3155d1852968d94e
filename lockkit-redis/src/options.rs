//! [`RedisOptions`]: which server or cluster, under which key prefix, and how
//! waiters are woken. Parsed from a URL in `url.rs`.

use std::fmt;

use lockkit_core::LockError;
use lockkit_core::url::{PrefixRule, Timeouts};

use crate::eviction::Eviction;
use crate::keys::KeyLayout;
use crate::replicas::ReplicaAck;
use crate::url::{DEFAULT_PREFIX, DEFAULT_TIMEOUTS};

/// Single server, or Redis Cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Topology {
    /// `redis://`: a single server, unless it turns out to be a cluster node (then
    /// the driver switches to [`Topology::Cluster`] with it as the seed).
    Detect,
    /// `redis-cluster://`: a Redis Cluster, reached through these seed nodes.
    Cluster,
    /// `redis-sentinel://`: the master of a group watched by these sentinels.
    Sentinel,
}

/// What a `redis-sentinel://` URL names besides the sentinels: the master's name,
/// and how to reach a data node of the group once the sentinels name it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct SentinelTarget {
    /// The name the sentinels monitor the master under.
    pub(crate) master: String,
    /// `redis://user:password@` (or `rediss://…`): a data node's URL before its
    /// address.
    pub(crate) node_prefix: String,
    /// The client options after a data node's address (`?protocol=resp3`).
    pub(crate) node_suffix: String,
}

impl SentinelTarget {
    /// The URL of the data node at `addr` (`host:port`).
    pub(crate) fn node_url(&self, addr: &str) -> String {
        format!("{}{addr}{}", self.node_prefix, self.node_suffix)
    }
}

impl fmt::Debug for SentinelTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The prefix may hold a password.
        f.debug_struct("SentinelTarget")
            .field("master", &self.master)
            .finish_non_exhaustive()
    }
}

/// How waiters learn of a release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WakeMode {
    /// A release wakes exactly one waiter through its driver's pub/sub channel,
    /// with a polling fallback (the default; `?wake=notify`).
    Notify,
    /// Waiters only poll, with jittered backoff from 2 ms to 50 ms (`?wake=poll`):
    /// the baseline the benchmarks compare against, or for servers where pub/sub is
    /// disabled.
    Poll,
}

/// What a key's fencing tokens rest on: its counter alone, or its counter and the
/// server's clock (invariants R3, R5, RL2). It matters when Redis loses the
/// counter's last bumps: a restart without persistence (no `appendonly yes` +
/// `appendfsync always`) forgets the counter, and a failover to a replica that had
/// not yet received the last grants sets it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum FenceSeed {
    /// The counter alone: the first token is 1, and after a restart that lost the
    /// counter, or a failover that set it back, tokens repeat
    /// (`?fence_seed=counter`, the default).
    #[default]
    Counter,
    /// Never below the Redis server's clock in microseconds (`?fence_seed=clock`):
    /// after a restart that lost the counter, or a failover to a replica whose
    /// counter is behind, tokens still go up, as long as the key was granted fewer
    /// than a million times a second on average and the clock of the server that
    /// grants is not behind the one before it (the same clock after a restart; an
    /// NTP-synchronised one after a failover, which takes seconds). Each grant
    /// reads and writes the counter once more. Tokens are ~2^51 (they fit a
    /// signed 64-bit column).
    Clock,
}

impl FenceSeed {
    /// The acquire script's argument.
    pub(crate) fn script_arg(self) -> &'static str {
        match self {
            Self::Counter => "",
            Self::Clock => "clock",
        }
    }
}

/// Settings for [`super::RedisDriver`]. `Debug` never shows the password.
///
/// # Examples
///
/// ```
/// use lockkit::redis::RedisOptions;
///
/// let single = RedisOptions::from_url("redis://:secret@127.0.0.1:6379/0?prefix=app")?;
/// assert_eq!(single.prefix(), "app");
/// assert!(!format!("{single:?}").contains("secret"));
///
/// let cluster = RedisOptions::from_url("redis-cluster://10.0.0.1:7000,10.0.0.2:7000")?;
/// assert!(cluster.is_cluster());
///
/// // TLS options name files, read when the URL is parsed:
/// let err = RedisOptions::from_url("rediss://:secret@10.0.0.1:6380?tls_ca=/no/such/ca.pem").unwrap_err();
/// assert!(err.to_string().contains("tls_ca=/no/such/ca.pem"));
/// assert!(!err.to_string().contains("secret"));
/// # Ok::<(), lockkit::LockError>(())
/// ```
#[derive(Clone)]
pub struct RedisOptions {
    /// One `redis://` (or `rediss://`) URL per node: the server, or the seeds.
    pub(crate) nodes: Vec<String>,
    pub(crate) topology: Topology,
    /// With [`Topology::Sentinel`]: the master's name and its nodes' URLs.
    pub(crate) sentinel: Option<SentinelTarget>,
    pub(crate) prefix: String,
    pub(crate) keys: KeyLayout,
    pub(crate) wake: WakeMode,
    pub(crate) fence_seed: FenceSeed,
    /// `eviction=refuse|accept`.
    pub(crate) eviction: Eviction,
    /// `wait_replicas` and `wait_timeout_ms`.
    pub(crate) replica_ack: Option<ReplicaAck>,
    /// From `tls_ca`/`tls_cert`/`tls_key`; `None` for plain TCP, or TLS verified
    /// against the system roots.
    pub(crate) tls: Option<crate::tls::Certs>,
    /// Connecting, and each command.
    pub(crate) timeouts: Timeouts,
    /// The URL without its password, for `Debug`.
    pub(crate) shown: String,
}

impl fmt::Debug for RedisOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisOptions")
            .field("url", &self.shown)
            .field("topology", &self.topology)
            .field("prefix", &self.prefix)
            .field("keys", &self.keys)
            .field("wake", &self.wake)
            .field("fence_seed", &self.fence_seed)
            .field("eviction", &self.eviction)
            .field("replica_ack", &self.replica_ack)
            .field("tls", &self.tls)
            .field("timeouts", &self.timeouts)
            .finish()
    }
}

impl RedisOptions {
    /// The key prefix (default `lockkit`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Whether the URL named a cluster (`redis-cluster://`). A `redis://` URL that
    /// reaches a cluster node is detected at connect time instead.
    pub fn is_cluster(&self) -> bool {
        self.topology == Topology::Cluster
    }

    /// How waiters are woken.
    pub fn wake(&self) -> WakeMode {
        self.wake
    }

    /// Where a missing fencing counter starts (`?fence_seed=`; default
    /// [`FenceSeed::Counter`]).
    pub fn fence_seed(&self) -> FenceSeed {
        self.fence_seed
    }

    /// Where each lock's own key lives (`?keys=`; default [`KeyLayout::Tagged`]).
    pub fn keys(&self) -> KeyLayout {
        self.keys
    }

    /// Names each lock's own key as `layout` says: [`KeyLayout::Plain`] shares
    /// locks with other `SET NX` libraries.
    pub fn with_keys(mut self, layout: KeyLayout) -> Self {
        self.keys = layout;
        self
    }

    /// Wakes waiters as `wake` says.
    pub fn with_wake(mut self, wake: WakeMode) -> Self {
        self.wake = wake;
        self
    }

    /// Puts lockkit's keys under `prefix` (no braces: see the crate docs).
    ///
    /// # Errors
    ///
    /// [`LockError::Config`] for a prefix with a brace, or empty.
    pub fn with_prefix(mut self, prefix: &str) -> Result<Self, LockError> {
        self.prefix = PrefixRule::NoBraces
            .check(prefix)
            .map_err(|why| LockError::Config(format!("prefix `{prefix}`: {why}")))?;
        Ok(self)
    }

    /// How many replicas must acknowledge each grant and renewal
    /// (`?wait_replicas=N&wait_timeout_ms=T`); `None` by default.
    pub fn replica_ack(&self) -> Option<ReplicaAck> {
        self.replica_ack
    }

    /// Starts a missing fencing counter as `seed` says.
    pub fn with_fence_seed(mut self, seed: FenceSeed) -> Self {
        self.fence_seed = seed;
        self
    }

    /// What is done with a server whose eviction policy can evict lockkit's keys
    /// (`?eviction=`; default [`Eviction::Refuse`]).
    pub fn eviction(&self) -> Eviction {
        self.eviction
    }

    /// Refuses or accepts a server whose eviction policy can evict lockkit's keys,
    /// as `eviction` says. [`Eviction::Accept`] is unsafe: see there.
    pub fn with_eviction(mut self, eviction: Eviction) -> Self {
        self.eviction = eviction;
        self
    }
}

/// `redis://127.0.0.1:6379` with lockkit's defaults: prefix `lockkit`, tagged
/// keys, woken waiters, counter-seeded tokens. For the constructors that take the
/// application's client, which ignore the address.
impl Default for RedisOptions {
    fn default() -> Self {
        let url = "redis://127.0.0.1:6379";
        Self {
            nodes: vec![url.to_owned()],
            topology: Topology::Detect,
            sentinel: None,
            prefix: DEFAULT_PREFIX.to_owned(),
            keys: KeyLayout::default(),
            wake: WakeMode::Notify,
            fence_seed: FenceSeed::default(),
            eviction: Eviction::default(),
            replica_ack: None,
            tls: None,
            timeouts: DEFAULT_TIMEOUTS,
            shown: url.to_owned(),
        }
    }
}
