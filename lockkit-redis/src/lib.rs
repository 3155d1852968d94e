//! The Redis driver for lockkit. Not for direct use; see the `lockkit` crate.
//!
//! `redis://[user:password@]host:port[/db][?prefix=NAME]` (and `rediss://` for
//! TLS once the `tls` feature lands) for a single instance, and [`RedlockDriver`]
//! for Redlock over N independent masters
//! (`redlock://[user:password@]h1:p1,h2:p2,…[?prefix=NAME&drift_ms=N&retry_ms=N]`,
//! or [`RedlockOptions::from_masters`]): a quorum of `N/2 + 1` masters, validity
//! `ttl − elapsed − clock drift`, release on every master, retry after a random
//! delay, and fencing tokens that stay increasing as long as a quorum of masters
//! keeps its data — see [`RedlockDriver`] for the algorithm and exactly
//! where Redlock cannot keep tokens monotonic. Cluster is the next step.
//!
//! # Mapping
//!
//! A lock `K` uses three keys sharing the hash tag `{K}` (so they stay together in
//! a cluster): `<prefix>:{K}:lock` holds `<owner>:<token>` with a `PX` TTL,
//! `<prefix>:{K}:fence` is the fencing counter (`INCR`ed by the acquiring script,
//! never expired), and `<prefix>:{K}:released` is the pub/sub channel a release
//! publishes on. The default prefix is `lockkit`.
//!
//! # Guarantees and limits
//!
//! - Acquire, extend and release are each one Lua script (atomic on the server),
//!   one per file under `scripts/`, sent with EVALSHA (reloaded on NOSCRIPT).
//! - Waiters subscribe to the key's channel *before* they retry, and fall back to
//!   polling (at most every 500 ms, or at the holder's expiry) if a message is lost;
//!   one message wakes one waiter per process.
//! - A watchdog round renews all of a driver's locks in one script call.
//! - **Durability:** without `appendonly yes` + `appendfsync always`, a Redis
//!   restart loses held locks *and fencing counters*: a counter that restarts from
//!   zero hands out tokens a protected resource has already seen, which it must then
//!   refuse (the resource keeps the highest token it saw). On failover to an
//!   asynchronous replica, the replica may not have the lock yet, so two clients can
//!   hold it at once; fencing tokens checked by the resource are the defence.

mod driver;
mod keys;
mod options;
mod redlock;
mod scripts;
mod wait;

pub use driver::RedisDriver;
pub use options::RedisOptions;
pub use redlock::{RedlockDriver, RedlockOptions};

use std::sync::Arc;

use lockkit_core::{ConnectFuture, DriverEntry, LockDriver};

/// How the `lockkit` facade finds this driver.
pub const DRIVER: DriverEntry = DriverEntry::new("redis", &["redis"], "redis", connect);

fn connect(url: &str) -> ConnectFuture {
    let options = RedisOptions::from_url(url);
    Box::pin(async move {
        let driver = RedisDriver::connect(options?).await?;
        Ok(Arc::new(driver) as Arc<dyn LockDriver>)
    })
}
