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

/// Every driver lockkit has: its schemes, the feature that compiles it in, and the
/// port its server listens on by default. Used to tell a user which feature to turn
/// on, or which scheme a URL without one needs.
const KNOWN: &[(&str, &str, Option<u16>)] = &[
    ("mem", "mem", None),
    ("sqlite", "sqlite", None),
    ("redis", "redis", Some(6379)),
    ("rediss", "redis", None),
    ("redlock", "redis", None),
    ("redis-cluster", "redis", None),
    ("rediss-cluster", "redis", None),
    ("etcd", "etcd", Some(2379)),
    ("etcds", "etcd", None),
    ("zk", "zk", Some(2181)),
    ("zookeeper", "zk", None),
    ("consul", "consul", Some(8500)),
    ("consuls", "consul", None),
    ("postgres", "postgres", Some(5432)),
    ("postgresql", "postgres", None),
    ("mysql", "mysql", Some(3306)),
    ("mariadb", "mysql", None),
];

/// Connects to the backend named by `url` and returns a [`Locker`] over it.
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
    Ok(Locker::new(connect_driver(url).await?))
}

/// Like [`connect`], but returns the bare driver (for the conformance suite, or to
/// build a [`Locker`] with other settings).
///
/// # Errors
///
/// As [`connect`].
pub async fn connect_driver(url: &str) -> Result<std::sync::Arc<dyn LockDriver>> {
    if let Some(driver) = DRIVERS.iter().find(|d| d.accepts(url)) {
        return (driver.connect)(url).await;
    }
    Err(LockError::invalid_url(url, no_driver(url)))
}

/// Why no compiled-in driver takes `url`, and what to write instead.
fn no_driver(url: &str) -> String {
    let compiled: Vec<&str> = DRIVERS
        .iter()
        .flat_map(|d| d.schemes.iter().copied())
        .collect();
    let compiled = compiled.join(", ");
    let known = KNOWN.iter().map(|(s, _, _)| *s);
    // `127.0.0.1:6379` and `localhost:6379` have no scheme, though they have a colon.
    let scheme = lockkit_core::url_scheme(url)
        .map(str::to_ascii_lowercase)
        .filter(|s| {
            url.contains("://")
                || lockkit_core::url::did_you_mean(s, KNOWN.iter().map(|(k, _, _)| *k)).is_some()
        });
    let Some(scheme) = scheme else {
        // `127.0.0.1:6379`, `localhost`: a host without a scheme.
        let port = url
            .rsplit_once(':')
            .and_then(|(_, p)| p.trim_end_matches('/').parse::<u16>().ok());
        let guess = port.and_then(|p| KNOWN.iter().find(|(_, _, d)| *d == Some(p)));
        return match guess {
            Some((scheme, _, _)) => format!(
                "no scheme; did you mean `{scheme}://{url}`? Write SCHEME://…, with one of: {compiled}"
            ),
            None => format!("no scheme; write SCHEME://…, with one of: {compiled}"),
        };
    };
    if let Some((_, feature, _)) = KNOWN.iter().find(|(s, _, _)| *s == scheme) {
        return format!(
            "the `{scheme}` driver is not compiled in; enable lockkit's `{feature}` feature \
             (schemes compiled in: {compiled})"
        );
    }
    match lockkit_core::url::did_you_mean(&scheme, known) {
        Some(near) => format!(
            "unknown scheme `{scheme}`; did you mean `{near}://`? (schemes compiled in: {compiled})"
        ),
        None => format!("unknown scheme `{scheme}`; schemes compiled in: {compiled}"),
    }
}
