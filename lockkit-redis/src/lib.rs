//! The Redis driver for lockkit. Not for direct use; see the `lockkit` crate.
//!
//! | URL | topology |
//! |---|---|
//! | `redis://[user:password@]host:port[/db]` | one server (a cluster node is detected, and the cluster used) |
//! | `rediss://…` | the same over TLS |
//! | `redis-cluster://[user:password@]host:port,host:port…` | Redis Cluster through these seeds |
//! | `redis-sentinel://[user:password@]s1:p1,s2:p2…/MASTER_NAME` | the master of a group watched by these sentinels, followed across failovers (the credentials are the data nodes'; sentinels are asked without them) |
//! | `rediss-sentinel://…` | the same over TLS, to the sentinels and the data nodes |
//! | `redlock://[user:password@]h1:p1,h2:p2,…[?drift_ms=N&retry_ms=N&request_timeout_ms=N]` | Redlock over N independent masters ([`RedlockDriver`]) |
//! | `redlocks://…` | the same over TLS to every master |
//!
//! Options: `?prefix=NAME` (default `lockkit`), `?wake=notify|poll` (see
//! [`WakeMode`]), `?fence_seed=counter|clock` (see [`FenceSeed`]),
//! `?wait_replicas=N&wait_timeout_ms=T` (see [`ReplicaAck`]),
//! `?eviction=refuse|accept` (see [Eviction](#eviction); `accept` is unsafe).
//!
//! # Eviction
//!
//! lockkit's keys must never be evicted: a fencing counter has no TTL, and a
//! counter Redis evicts starts again, so tokens repeat; a held lock evicted
//! before its lease ends is granted to a second client. Only
//! `maxmemory-policy noeviction` (Redis's default) guarantees that; any other
//! policy can evict them once Redis reaches `maxmemory`: `allkeys-*` any key,
//! `volatile-*` the keys with a TTL, held locks among them.
//!
//! So the driver reads the policy (`CONFIG GET maxmemory-policy`, or `INFO
//! memory` where `CONFIG` is renamed or denied, as on managed services) of every
//! server it writes to: the server, every Cluster master, the Sentinel master
//! and every master a failover moves it to, every Redlock master. It reads it
//! when it connects (the application-client constructors too), again before the
//! next request after any error after which the client may reconnect, and at
//! least every 10 s while in use (the cluster client reconnects to a node
//! without reporting it). Any policy but `noeviction`, or one it cannot read, is
//! refused with a [`LockError::Config`](lockkit_core::LockError::Config) naming
//! the setting, what it can evict and the fix: `CONFIG SET maxmemory-policy
//! noeviction` (and in the config file), or a Redis of its own for the locks.
//! After connect, the refusal fails the requests instead (on a Cluster, while a
//! master cannot be asked during a failover, requests go ahead and the check
//! waits for it); a Redlock master refused after connect counts as failed for
//! the quorum (see [`RedlockOptions::eviction`]).
//!
//! `?eviction=accept` ([`Eviction::Accept`]) connects without reading the
//! policy. **It is unsafe** on a server that may evict: RELIABILITY.md's
//! *allkeys-lru, eviction=accept* row shows a cache filling such a Redis, its
//! fencing counter evicted and tokens starting again from 1.
//!
//! # TLS
//!
//! `rediss://`, `rediss-cluster://` and `rediss-sentinel://` connect over TLS (rustls with the *ring*
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
//! - `<prefix>:{K}:lock` holds an exclusive (write) hold's `<owner>:<token>` with
//!   a `PX` TTL, followed by `:<label>` (the owner label, for inspection) on a
//!   single server or Cluster. While readers or a semaphore's permits hold, it
//!   holds `~S` or `~P<limit>` instead, expiring with the last lease: an
//!   exclusive acquire sees the key held, and every permit request is checked
//!   against that limit;
//! - `<prefix>:{K}:fence` is the fencing counter (`INCR`ed by every grant of every
//!   mode, never expired);
//! - `<prefix>:{K}:holders`, a sorted set of readers or permit holders scored by
//!   when their own lease ends (expired ones are dropped by the next acquire), and
//!   `<prefix>:{K}:holds`, each one's `token[:label]`;
//! - `<prefix>:{K}:queue`, the waiters in order of arrival, with `waiters` (scored
//!   by when a waiter's entry expires) and `woken` (waiters woken and not back
//!   yet); each expires as a whole when nobody waits. Redlock uses `waiters` only.
//!
//! `scripts/queue.lua` describes them in full. Each driver listens on its own
//! channel `<prefix>:wake:<driver id>`.
//!
//! # Sharing locks with `SET NX` libraries (`?keys=plain`)
//!
//! With `keys=plain` ([`KeyLayout::Plain`]) the lock `K` itself is the Redis key
//! `K`, a string with a `PX` TTL, as redis-py's `Lock`, rslock, node-redlock and
//! every other `SET K value NX PX ttl` library name theirs; the side keys stay
//! `<prefix>:{K}:…`, in `K`'s hash slot. Then:
//!
//! - lockkit and such a library **exclude each other** in both directions: each
//!   sees the key taken. lockkit's readers and permits keep it taken too.
//! - A library's hold has **no fencing token**; lockkit's tokens keep rising
//!   across it. `inspect` shows it as an exclusive holder with token 0, labelled
//!   as another library's.
//! - **No order across libraries.** A library's release wakes no lockkit waiter
//!   (they retry every second), and a library polls, so it may take the lock
//!   ahead of queued lockkit waiters.
//! - A key with a brace is refused (`Config`), and listing is `Unsupported`.
//!
//! Redisson's hash layout is not supported: no Redisson client can be run where
//! lockkit is tested.
//!
//! # Sentinel
//!
//! With `redis-sentinel://` the driver asks the sentinels for the master
//! (`SENTINEL get-master-addr-by-name`), checks that it answers `ROLE` as a
//! master, and sends every command there. A command that fails because the
//! connection broke, or because the node answers `READONLY` (demoted), makes the
//! driver ask the sentinels again and move to the new master; a `READONLY`
//! refusal wrote nothing and is sent once more there, a broken connection's
//! outcome is unknown and goes back to the caller. The wake channel is
//! subscribed on a data node of the group (`PUBLISH` on the master reaches its
//! replicas' subscribers) and moves to another when its node goes away.
//!
//! Failover is asynchronous replication's: a grant the old master had not yet
//! passed to the promoted replica is lost with it, and the lock can be granted
//! again; so can the last bumps of its fencing counter, so tokens repeat unless
//! `fence_seed=clock` keeps them above the clock (see [`FenceSeed`]). Fencing
//! tokens checked by the resource are the defence, as on any single Redis
//! restarted without persistence. `wait_replicas` narrows the window (see
//! [`ReplicaAck`]).
//!
//! # Waiting
//!
//! A waiting acquire's first attempt both tries the lock and, if it must wait,
//! queues the waiter with its mode — one round trip. A waiter keeps its place
//! until it is granted or gives up. Readers never overtake a writer queued before
//! them, so writers are not starved; a writer does not wait behind the queue, and
//! a new `try_lock` may take a free lock before the woken waiter comes, so the
//! driver does not claim `fair`.
//!
//! A release, a force-release or a waiter giving up wakes exactly the waiters the
//! change admits and that were not woken already: the next writer, or the readers
//! up to the next writer, or one permit waiter per free permit. It publishes to
//! each one's driver only, naming the waiter: never a herd. A reader released
//! while other readers hold wakes nobody. A waiter retries anyway after 1 s (a
//! lost message) or at the holder's expiry (nobody publishes when a lease runs
//! out), and polls with backoff while the wake-up connection is down or with
//! `?wake=poll` (polling waiters queue too, so the order holds). A waiter that
//! dies is skipped after its entry's 3 s lifetime; on a single server, one whose
//! process is gone is skipped at once (a Cluster's `PUBLISH` counts only the
//! subscribers on the publishing node, so it cannot tell).
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
mod app_client;
mod call;
mod connection;
mod contender;
mod driver;
mod error;
mod eviction;
mod inspect;
mod keys;
mod list;
mod options;
mod proclaim;
mod redlock;
mod renew;
mod replicas;
mod scripts;
mod sentinel;
mod tls;
mod url;
mod wait;

pub use driver::RedisDriver;
pub use eviction::Eviction;
pub use keys::KeyLayout;
pub use options::{FenceSeed, RedisOptions, WakeMode};
pub use redlock::{RedlockDriver, RedlockOptions};
pub use replicas::ReplicaAck;

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
