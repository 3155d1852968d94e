#![doc = include_str!("lib.md")]
//! | feature | URL schemes | driver |
//! |---|---|---|
#![cfg_attr(
    feature = "sqlite",
    doc = "| `sqlite` (default) | `sqlite://path`, `sqlite:///abs/path`, `sqlite::memory:` | [`sqlite`]: a lease table in a local file |"
)]
#![cfg_attr(
    not(feature = "sqlite"),
    doc = "| `sqlite` (default) | `sqlite://path`, `sqlite:///abs/path`, `sqlite::memory:` | `sqlite` (enable the feature) |"
)]
#![cfg_attr(
    feature = "postgres",
    doc = "| `postgres` | `postgres://`, `postgresql://` | [`postgres`]: a lease table, or advisory locks |"
)]
#![cfg_attr(
    not(feature = "postgres"),
    doc = "| `postgres` | `postgres://`, `postgresql://` | `postgres` (enable the feature) |"
)]
#![cfg_attr(
    feature = "mysql",
    doc = "| `mysql` | `mysql://`, `mariadb://` | [`mysql`]: a lease table, or `GET_LOCK` |"
)]
#![cfg_attr(
    not(feature = "mysql"),
    doc = "| `mysql` | `mysql://`, `mariadb://` | `mysql` (enable the feature) |"
)]
#![cfg_attr(
    feature = "redis",
    doc = "| `redis` | `redis://`, `rediss://`, `redis-cluster://`, `rediss-cluster://`, `redis-sentinel://`, `rediss-sentinel://`, `redlock://`, `redlocks://` | [`redis`]: single server, Cluster (feature `redis-cluster`), Sentinel, Redlock |"
)]
#![cfg_attr(
    not(feature = "redis"),
    doc = "| `redis` | `redis://`, `rediss://`, `redis-cluster://`, `rediss-cluster://`, `redis-sentinel://`, `rediss-sentinel://`, `redlock://`, `redlocks://` | `redis` (enable the feature) |"
)]
#![cfg_attr(
    feature = "etcd",
    doc = "| `etcd` | `etcd://`, `etcds://` | [`etcd`]: shared leases, revision-ordered queue |"
)]
#![cfg_attr(
    not(feature = "etcd"),
    doc = "| `etcd` | `etcd://`, `etcds://` | `etcd` (enable the feature) |"
)]
#![cfg_attr(
    feature = "zk",
    doc = "| `zk` | `zk://`, `zookeeper://`, `zks://` | [`zk`]: ephemeral sequential nodes, read-write lock, fair queue |"
)]
#![cfg_attr(
    not(feature = "zk"),
    doc = "| `zk` | `zk://`, `zookeeper://`, `zks://` | `zk` (enable the feature) |"
)]
#![cfg_attr(
    feature = "consul",
    doc = "| `consul` | `consul://`, `consuls://` | [`consul`]: session + KV acquire (tested against a stand-in) |"
)]
#![cfg_attr(
    not(feature = "consul"),
    doc = "| `consul` | `consul://`, `consuls://` | `consul` (enable the feature) |"
)]
#![cfg_attr(
    feature = "mem",
    doc = "| `mem` | `mem://`, `mem://name` | [`mem`]: process-local, for tests |"
)]
#![cfg_attr(
    not(feature = "mem"),
    doc = "| `mem` | `mem://`, `mem://name` | `mem` (enable the feature) |"
)]
//!
//! Each driver's module is that backend's page: its URL options, key mapping,
//! numbered invariants, waiting, failure modes and the server settings it needs.
//! The guides under `docs/` in the repository cover fencing and safety, choosing a
//! backend, the primitives, interoperability and operating lockkit. Writing a
//! driver of your own? The contract it implements, and the pieces drivers share,
//! are in [`driver`].
#![cfg_attr(not(test), forbid(clippy::panic))]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "blocking")]
#[cfg_attr(docsrs, doc(cfg(feature = "blocking")))]
pub mod blocking;
pub mod driver;
mod known;

pub use lockkit_core::{
    Capabilities, DEFAULT_JOB_AT_MOST_FOR, DEFAULT_OBSERVE_INTERVAL, DEFAULT_WATCHDOG_TTL,
    Election, FencingToken, Holder, Inspect, Inspection, Job, JobRun, KeyError, Leader, Leadership,
    LockError, LockGuard, LockKey, LockMode, LockRequest, Locker, LostReason, MAX_KEY_LEN,
    MAX_LABEL_LEN, MAX_TTL, MIN_TTL, MultiLockGuard, MultiLockRequest, Observer, OwnerId, Result,
    Semaphore, TtlError, WakeUp, default_label, fence, redact_url,
};

/// Declares a driver module re-export behind its feature, with the docs.rs badge.
macro_rules! cfg_driver {
    ($feature:literal => $($item:item)*) => {
        $(
            #[cfg(feature = $feature)]
            #[cfg_attr(docsrs, doc(cfg(feature = $feature)))]
            $item
        )*
    };
}

cfg_driver! { "metrics" =>
    /// Metrics through the `metrics` facade: their names and labels, and
    /// [`metrics::describe`]. See [`Locker::with_metrics_group`].
    pub use lockkit_core::metrics;
}

cfg_driver! { "mem" =>
    /// `mem://`: the process-local reference driver.
    pub use lockkit_core::mem;
}

cfg_driver! { "postgres" =>
    /// `postgres://`: the PostgreSQL lease-table driver.
    pub use lockkit_sql::postgres;
}

cfg_driver! { "mysql" =>
    /// `mysql://`, `mariadb://`: the MySQL/MariaDB lease-table driver.
    pub use lockkit_sql::mysql;
}

cfg_driver! { "redis" =>
    /// `redis://`: the Redis driver.
    pub use lockkit_redis as redis;
}

cfg_driver! { "etcd" =>
    /// `etcd://`, `etcds://`: the etcd driver.
    pub use lockkit_etcd as etcd;
}

cfg_driver! { "consul" =>
    /// `consul://`, `consuls://`: the Consul driver (session + KV acquire).
    pub use lockkit_consul as consul;
}

cfg_driver! { "zk" =>
    /// `zk://`: the ZooKeeper driver (ephemeral sequential nodes, read-write lock).
    pub use lockkit_zk as zk;
}

cfg_driver! { "sqlite" =>
    /// `sqlite://`: the SQLite lease-table driver.
    pub use lockkit_sql::sqlite;
}

/// The README's Rust blocks, run as doc tests.
#[cfg(all(doctest, feature = "sqlite"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDocTests;

/// `docs/fencing-and-safety.md`'s Rust blocks, run as doc tests.
#[cfg(all(doctest, feature = "sqlite"))]
#[doc = include_str!("../docs/fencing-and-safety.md")]
pub struct FencingAndSafetyGuide;

/// `docs/choosing-a-backend.md`'s Rust blocks, run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../docs/choosing-a-backend.md")]
pub struct ChoosingABackendGuide;

/// `docs/primitives.md`'s Rust blocks, run as doc tests.
#[cfg(all(doctest, feature = "sqlite"))]
#[doc = include_str!("../docs/primitives.md")]
pub struct PrimitivesGuide;

/// `docs/interoperability.md`'s Rust blocks, run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../docs/interoperability.md")]
pub struct InteroperabilityGuide;

/// `docs/operating.md`'s Rust blocks, run as doc tests.
#[cfg(all(doctest, feature = "sqlite", feature = "blocking"))]
#[doc = include_str!("../docs/operating.md")]
pub struct OperatingGuide;

/// `docs/writing-a-driver.md`'s Rust blocks, run as doc tests.
#[cfg(all(doctest, feature = "mem"))]
#[doc = include_str!("../docs/writing-a-driver.md")]
pub struct WritingADriverGuide;

/// Connects to the backend named by `url` and returns a [`Locker`] over it (for
/// the bare driver, see [`driver::connect`]).
///
/// The scheme picks the driver, in any case (`Redis://` is `redis://`).
///
/// # Errors
///
/// [`LockError::InvalidUrl`] if the URL has no scheme (the message suggests one), a
/// mistyped one ("did you mean `postgres://`?"), or one whose driver is not compiled
/// in (the message names the schemes that are, and the feature to enable);
/// otherwise whatever the driver's connect returns.
pub async fn connect(url: &str) -> Result<Locker> {
    Ok(Locker::new(driver::connect(url).await?))
}
