//! The Redis driver for lockkit. Not for direct use; see the `lockkit` crate.
//!
//! | URL | topology |
//! |---|---|
//! | `redis://[user:password@]host:port[/db]` | one server (a cluster node is detected, and the cluster used) |
//! | `rediss://…` | the same over TLS |
//! | `redis-cluster://[user:password@]host:port,host:port…` | Redis Cluster through these seeds |
//! | `redlock://[user:password@]h1:p1,h2:p2,…[?drift_ms=N&retry_ms=N&request_timeout_ms=N]` | Redlock over N independent masters ([`RedlockDriver`]) |
//! | `redlocks://…` | the same over TLS to every master |
//!
//! Options: `?prefix=NAME` (default `lockkit`), `?wake=notify|poll` (see
//! [`WakeMode`]).
//!
//! # TLS
//!
//! `rediss://` and `rediss-cluster://` connect over TLS (rustls with the *ring*
//! crypto provider, installed as the process default unless the application
//! installed one). Options, each a file path read when the URL is parsed:
//!
//! - `?tls_ca=/path/ca.pem`: verify the server against these CA certificates only;
//!   without it, against the system's root certificates;
//! - `&tls_cert=/path/client.pem&tls_key=/path/client.key`: present this client
//!   certificate (mutual TLS).
//!
//! The server's certificate must name the host in the URL. A file that is missing or
//! not PEM is a [`LockError::Config`](lockkit_core::LockError::Config) naming the
//! option and the path; `tls_*` options on `redis://` are an
//! [`InvalidUrl`](lockkit_core::LockError::InvalidUrl). A server whose certificate
//! does not verify is a [`Connection`](lockkit_core::LockError::Connection) error
//! at connect time. **Redlock** over TLS is `redlocks://`, with the same options,
//! applied to every master.
//!
//! # Mapping
//!
//! A lock `K` uses these keys, all sharing the hash tag `{K}`, so that in a cluster
//! they live in one slot and one script can touch them all:
//!
//! - `<prefix>:{K}:lock` holds `<owner>:<token>` with a `PX` TTL, followed by
//!   `:<label>` (the owner label, for inspection) on a single server or Cluster;
//! - `<prefix>:{K}:fence` is the fencing counter (`INCR`ed by the acquiring script,
//!   never expired);
//! - `<prefix>:{K}:waiters` is a sorted set of waiting acquires, scored by when
//!   their entry expires (it expires as a whole when nobody waits);
//! - for a semaphore (single server and Cluster): `<prefix>:{K}:permits`, a sorted
//!   set of permit holders scored by when their own lease ends (expired ones are
//!   dropped by the next acquire), and `<prefix>:{K}:permit_tokens`, each holder's
//!   `token[:label]`. Meanwhile `lock` holds `~P:<limit>`, expiring with the last
//!   lease: an exclusive acquire sees the key held, and every permit request is
//!   checked against that limit. Redlock refuses permits (see the README).
//!
//! Each driver listens on its own channel `<prefix>:wake:<driver id>`.
//!
//! # Waiting
//!
//! A waiting acquire's first attempt both tries the lock and, if it is held, puts
//! the waiter in `waiters` — one round trip. A release deletes the lock and
//! publishes to the driver of the oldest live waiter only, naming that waiter: one
//! release wakes one waiter in one process, never a herd. Waiters are not served
//! in strict FIFO order (a new `try_lock` may take a free lock before the woken
//! waiter), so the driver does not claim `fair`. A waiter retries anyway after 1 s
//! (a lost message) or at the holder's expiry (nobody publishes when a lease runs
//! out), and polls with backoff while the wake-up connection is down or with
//! `?wake=poll`. A waiter that dies is skipped after its entry's 3 s lifetime.
//!
//! # Guarantees and limits
//!
//! - Acquire, extend and release are each one Lua script (atomic on the server),
//!   one per file under `scripts/`, sent with EVALSHA (reloaded on NOSCRIPT).
//! - A watchdog round renews all of a driver's locks in one script call on a single
//!   server; on a cluster, one call per hash slot, sent together so that each
//!   node's connection carries them as one pipeline.
//! - In a cluster, the connection follows MOVED/ASK redirects and refreshes its
//!   slot map, so locking keeps working while slots migrate.
//! - **Redlock** ([`RedlockDriver`]): a quorum of `N/2 + 1` independent masters,
//!   validity `ttl − elapsed − clock drift`, release on every master, retry after a
//!   random delay. Its fencing token is the largest counter of the granting quorum,
//!   written back to a quorum before the grant is reported, so tokens increase as
//!   long as a quorum of masters keeps its data; a master restarted without
//!   `appendfsync always` breaks that (see [`RedlockDriver`] for exactly where, and
//!   the mitigations). Redlock waiters join the lock's waiters set on every
//!   master, and each master's release wakes the oldest live one there through the
//!   same wake channels as the single-server driver (one subscription per master);
//!   the random-delay retry of the algorithm remains as the fallback, about once a
//!   second while a quorum of masters can wake the waiter (`?wake=poll`: retry
//!   only).
//! - **Durability:** without `appendonly yes` + `appendfsync always`, a Redis
//!   restart loses held locks *and fencing counters*: a counter that restarts from
//!   zero hands out tokens a protected resource has already seen, which it must then
//!   refuse (the resource keeps the highest token it saw). On failover to an
//!   asynchronous replica, the replica may not have the lock yet, so two clients can
//!   hold it at once; fencing tokens checked by the resource are the defence.

mod acquire;
mod connection;
mod contender;
mod driver;
mod error;
mod inspect;
mod keys;
mod options;
mod redlock;
mod renew;
mod scripts;
mod tls;
mod url;
mod wait;

pub use driver::RedisDriver;
pub use options::{FenceSeed, RedisOptions, WakeMode};
pub use redlock::{RedlockDriver, RedlockOptions};

use std::sync::Arc;

use lockkit_core::driver::registry::{REDIS, REDLOCK};
use lockkit_core::driver::{Driver, DriverEntry, LockDriver};

/// How the `lockkit` facade finds the single-server and Cluster driver.
pub const DRIVER: DriverEntry = DriverEntry::of::<RedisDriver>();

/// How the `lockkit` facade finds the Redlock driver.
pub const REDLOCK_DRIVER: DriverEntry = DriverEntry::of::<RedlockDriver>();

impl Driver for RedisDriver {
    const NAME: &'static str = REDIS.name;
    const URL_SCHEMES: &'static [&'static str] = REDIS.schemes;
    const FEATURE: &'static str = REDIS.feature;
    type Options = RedisOptions;

    fn options(url: &str) -> lockkit_core::Result<RedisOptions> {
        RedisOptions::from_url(url)
    }

    async fn connect(options: RedisOptions) -> lockkit_core::Result<Arc<dyn LockDriver>> {
        Ok(Arc::new(RedisDriver::connect(options).await?))
    }
}

impl Driver for RedlockDriver {
    const NAME: &'static str = REDLOCK.name;
    const URL_SCHEMES: &'static [&'static str] = REDLOCK.schemes;
    const FEATURE: &'static str = REDLOCK.feature;
    type Options = RedlockOptions;

    fn options(url: &str) -> lockkit_core::Result<RedlockOptions> {
        RedlockOptions::from_url(url)
    }

    async fn connect(options: RedlockOptions) -> lockkit_core::Result<Arc<dyn LockDriver>> {
        Ok(Arc::new(RedlockDriver::connect(options).await?))
    }
}
