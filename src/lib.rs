//! # lockkit
//!
//! Distributed locks with one async contract and pluggable backends.
//!
//! Write against [`Locker`] once; pick the backend with a Cargo feature and a URL:
//!
//! ```
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), lockkit::LockError> {
//! # let dir = tempfile::tempdir().unwrap();
//! # let url = format!("sqlite://{}", dir.path().join("locks.db").display());
//! let locker = lockkit::connect(&url).await?; // e.g. "sqlite://locks.db"
//! let guard = locker.lock("inventory:sku-42").wait(Duration::from_secs(5)).await?;
//! // Send the token with every write; the resource rejects stale ones.
//! let token = guard.token();
//! # let _ = token;
//! guard.release().await?;
//! # Ok(()) }
//! ```
//!
//! | feature | URL schemes | driver |
//! |---|---|---|
//! | `sqlite` (default) | `sqlite://path`, `sqlite::memory:` | [`sqlite`] |
//! | `postgres` | `postgres://`, `postgresql://` | [`postgres`] |
//! | `mysql` | `mysql://`, `mariadb://` | [`mysql`] |
//! | `redis` | `redis://`, `rediss://`, `redis-cluster://`, `redlock://` | [`redis`] (single server, Cluster, Redlock) |
//! | `etcd` | `etcd://`, `etcds://` | [`etcd`] (lease per TTL, revision-ordered queue) |
//! | `zk` | `zk://`, `zookeeper://` | [`zk`] (ephemeral sequential nodes, read-write lock) |
//! | `consul` | `consul://`, `consuls://` | [`consul`] (session + KV acquire; tested against a stand-in) |
//! | `mem` | `mem://`, `mem://name` | [`mem`] (process-local) |
//!
//! See the README for what each backend guarantees, and [`fence`] for the resource
//! side of fencing tokens.
#![cfg_attr(not(test), forbid(clippy::panic))]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use lockkit_core::{
    AcquireRequest, Cancellation, Capabilities, DEFAULT_WATCHDOG_TTL, DriverEntry, FencingToken,
    Grant, KeyError, LockDriver, LockError, LockGuard, LockKey, LockRequest, Locker, LostReason,
    MAX_KEY_LEN, MAX_TTL, MIN_TTL, OwnerId, Renewal, Result, TtlError, Wait, WakeUp, fence,
    redact_url,
};

/// Re-exported so drivers and harnesses implement lockkit's traits with the same
/// macro version.
pub use lockkit_core::async_trait;

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

/// The drivers compiled into this build, in the order [`connect`] tries them.
pub const DRIVERS: &[DriverEntry] = &[
    #[cfg(feature = "mem")]
    lockkit_core::mem::DRIVER,
    #[cfg(feature = "sqlite")]
    lockkit_sql::sqlite::DRIVER,
    #[cfg(feature = "postgres")]
    lockkit_sql::postgres::DRIVER,
    #[cfg(feature = "mysql")]
    lockkit_sql::mysql::DRIVER,
    #[cfg(feature = "redis")]
    lockkit_redis::DRIVER,
    #[cfg(feature = "etcd")]
    lockkit_etcd::DRIVER,
    #[cfg(feature = "zk")]
    lockkit_zk::DRIVER,
    #[cfg(feature = "consul")]
    lockkit_consul::DRIVER,
];

/// Every driver lockkit has, with the feature that compiles it in: used to tell a
/// user which feature to turn on.
const KNOWN: &[(&str, &str)] = &[
    ("mem", "mem"),
    ("sqlite", "sqlite"),
    ("redis", "redis"),
    ("rediss", "redis"),
    ("redlock", "redis"),
    ("redis-cluster", "redis"),
    ("rediss-cluster", "redis"),
    ("etcd", "etcd"),
    ("etcds", "etcd"),
    ("zk", "zk"),
    ("zookeeper", "zk"),
    ("consul", "consul"),
    ("consuls", "consul"),
    ("postgres", "postgres"),
    ("postgresql", "postgres"),
    ("mysql", "mysql"),
    ("mariadb", "mysql"),
];

/// Connects to the backend named by `url` and returns a [`Locker`] over it.
///
/// # Errors
///
/// [`LockError::InvalidUrl`] if the URL has no scheme, or its scheme's driver is not
/// compiled in (the message names the schemes that are, and the feature to enable);
/// otherwise whatever the driver's connect returns.
pub async fn connect(url: &str) -> Result<Locker> {
    Ok(Locker::new(connect_driver(url).await?))
}

/// Like [`connect`], but returns the bare driver (for the conformance suite, or to
/// build a [`Locker`] with other settings).
///
/// # Errors
///
/// As [`connect`].
pub async fn connect_driver(url: &str) -> Result<std::sync::Arc<dyn LockDriver>> {
    let compiled: Vec<&str> = DRIVERS
        .iter()
        .flat_map(|d| d.schemes.iter().copied())
        .collect();
    let Some(scheme) = lockkit_core::url_scheme(url) else {
        return Err(LockError::invalid_url(
            url,
            format!(
                "no scheme; write SCHEME://…, with one of: {}",
                compiled.join(", ")
            ),
        ));
    };
    if let Some(driver) = DRIVERS.iter().find(|d| d.accepts(url)) {
        return (driver.connect)(url).await;
    }
    let hint = match KNOWN.iter().find(|(s, _)| *s == scheme) {
        Some((_, feature)) => format!(
            "the `{scheme}` driver is not compiled in; enable lockkit's `{feature}` feature"
        ),
        None => format!("unknown scheme `{scheme}`"),
    };
    Err(LockError::invalid_url(
        url,
        format!("{hint}; schemes compiled in: {}", compiled.join(", ")),
    ))
}
