//! The Redis driver for lockkit. Not for direct use; see the `lockkit` crate.
//!
//! | URL | topology |
//! |---|---|
//! | `redis://[user:password@]host:port[/db]` | one server (a cluster node is detected, and the cluster used; without the `cluster` feature, lockkit's `redis-cluster`, refused with a `Config` error) |
//! | `rediss://…` | the same over TLS |
//! | `redis-cluster://[user:password@]host:port,host:port…` | Redis Cluster through these seeds (`rediss-cluster://…` over TLS), with the `cluster` feature |
//! | `redis-sentinel://[user:password@]s1:p1,s2:p2…/MASTER_NAME` | the master of a group watched by these sentinels, followed across failovers (the credentials are the data nodes'; sentinels are asked without them) |
//! | `rediss-sentinel://…` | the same over TLS, to the sentinels and the data nodes |
//! | `redlock://[user:password@]h1:p1,h2:p2,…[?drift_ms=N&retry_ms=N&request_timeout_ms=N]` | Redlock over N independent masters ([`RedlockDriver`]) |
//! | `redlocks://…` | the same over TLS to every master |
//!
//! Options: `?prefix=NAME` (default `lockkit`), `?wake=notify|poll` (see
//! [`WakeMode`]), `?fence_seed=counter|clock` (see [`FenceSeed`]),
//! `?wait_replicas=N&wait_timeout_ms=T` (see [`ReplicaAck`]),
//! `?keys=tagged|plain` (see [`KeyLayout`]), `?eviction=refuse|accept` (see
//! [`Eviction`]; `accept` is unsafe), and the timeouts below; all of them in
//! [`RedisOptions::from_url`].
//!
//! # Invariants
//!
//! What exclusion and fencing rest on, server settings included. Code that
//! relies on one cites its number (R1…, and RL1… for Redlock); each names the
//! test that proves it: the conformance suites in `conformance_redis.rs`
//! (single server, Cluster, Sentinel, over TLS too), this crate's tests, and the
//! fault trials of the reliability suite (`tests/reliability/`).
//!
//! 1. **One script decides.** Every grant, renewal and release, of every mode,
//!    is one Lua script, atomic on the server. A lock's keys share the hash tag
//!    `{K}`, so on a Cluster they live in one slot and the script runs on one
//!    master. A grant writes the lock key only while no other hold excludes it;
//!    a renewal or release compares the owner in the same script, so it never
//!    touches a newer holder's hold (`mutual_exclusion_under_contention`,
//!    `writer_excludes_readers_and_writers`,
//!    `at_most_limit_permits_under_contention`,
//!    `release_never_deletes_a_newer_holders_lock`;
//!    `locking_keeps_working_through_a_slot_migration`).
//! 2. **The client's lease ends first.** A grant's or renewal's deadline counts
//!    from before its request was sent; the server's `PX` counts from when the
//!    script ran. A renewal that finds the hold gone reports `Lost`
//!    (`extend_keeps_the_lock_and_fails_after_loss`,
//!    `lost_signal_fires_when_hold_disappears`, `watchdog_keeps_lock_past_ttl`,
//!    `redis::holder_paused_past_its_lease`). Redis judges expiry, and shared
//!    holds' and permits' leases (`TIME`), on its wall clock: a jump of the
//!    server's clock moves every expiry.
//! 3. **Tokens only grow while the counter survives.** `<prefix>:{K}:fence` has
//!    no TTL, is `INCR`ed by every grant of every mode, and nothing but `purge`
//!    deletes it (`fencing_tokens_increase_across_holders`,
//!    `permit_tokens_increase_across_permits`). Only `appendonly yes` with
//!    `appendfsync always` keeps it, and the held locks, across a restart
//!    (`redis_with_fsynced_aof_killed_and_restarted_stays_safe`; an RDB
//!    snapshot restores it as of the snapshot:
//!    `a_waiter_outlasts_a_restarted_server_loading_its_snapshot`). Without,
//!    a restart frees every lock and the counter starts again, so tokens repeat
//!    (`redis_without_persistence_restarted_resets_the_token_counter`), unless
//!    `fence_seed=clock` keeps them above the server's clock ([`FenceSeed`]:
//!    `redis_without_persistence_restarted_with_clock_seeded_tokens_keeps_tokens_rising`,
//!    `clock_tokens_rise_over_a_counter_set_back_or_lost`,
//!    `counter_tokens_repeat_when_the_counter_is_set_back`).
//! 4. **Nothing evicts lockkit's keys.** Only `maxmemory-policy noeviction`
//!    (Redis's default) guarantees it: under `allkeys-*` a fencing counter can be
//!    evicted (tokens start again), under `volatile-*` and `allkeys-*` a held lock
//!    (granted to a second client). Any other policy, or one that cannot be read,
//!    is refused unless `eviction=accept` (see [`Eviction`];
//!    `tests/eviction.rs`, e.g.
//!    `a_server_that_can_evict_keys_with_a_ttl_is_refused_for_held_locks`,
//!    `a_replica_that_can_evict_is_refused_once_promoted`,
//!    `a_cluster_master_made_unsafe_is_refused_within_the_periodic_recheck`;
//!    with `accept`: `redis_used_as_a_cache_with_eviction_accepted`).
//! 5. **Failover loses what the replica had not received.** Replication is
//!    asynchronous: on a Sentinel or Cluster failover, a grant the old master had
//!    not passed on is lost, and the lock can be granted again; so can the
//!    counter's last bumps, so tokens repeat
//!    (`redis_sentinel_failover_before_replicating_repeats_a_token`,
//!    `redis_cluster_failover_before_replicating_repeats_a_token`). Fencing
//!    tokens checked by the resource are the defence. `fence_seed=clock` keeps
//!    tokens rising across it
//!    (`redis_sentinel_failover_before_replicating_with_clock_tokens_keeps_fencing`,
//!    `redis_cluster_failover_before_replicating_with_clock_tokens_keeps_fencing`);
//!    `wait_replicas=N` ([`ReplicaAck`]) grants and renews only what N replicas
//!    acknowledged, with `WAIT` in one pipeline with the script
//!    (`wait_replicas_grants_only_what_enough_replicas_acknowledged`,
//!    `wait_replicas_waits_on_the_master_of_the_locks_slot`,
//!    `redis_sentinel_failover_before_replicating_with_wait_replicas_loses_nothing`,
//!    `redis_cluster_failover_before_replicating_with_wait_replicas_loses_nothing`).
//!    That narrows the window without closing it: the sentinels may promote a
//!    replica that did not acknowledge.
//! 6. **A wake-up is only a hint.** A pub/sub message makes a waiter run the
//!    acquire script again, nothing more. A waiter retries anyway after 1 s (a
//!    lost message) or at the holder's expiry (nobody publishes when a lease runs
//!    out), and polls while the wake-up connection is down, so a lost wake-up
//!    slows a hand-off by at most that
//!    (`redis_wake_up_connection_killed_around_grants`, the pub/sub connection
//!    killed after each grant and before each release;
//!    `a_lost_wake_up_connection_is_logged_once_and_so_is_its_return`; the
//!    suite with no wake-ups at all, `redis_polling`).
//!
//! Redlock's own, where they differ ([`RedlockDriver`] has the reasoning; its
//! conformance suites, `redlock` and `redlock_two_of_five_killed`, are in
//! `conformance_redlock.rs`):
//!
//! 1. **A quorum decides, within its validity.** A grant needs `N/2 + 1`
//!    masters to say yes and ends at `sent + ttl − drift`, before any master's own
//!    expiry; a failed round releases on every master, those that said no
//!    included (`mutual_exclusion_under_contention` in `redlock` and
//!    `redlock_two_of_five_killed`,
//!    `paused_minority_does_not_stall_acquire_beyond_the_request_timeout`;
//!    `redlock_two_of_five_masters_killed`,
//!    `redlock_holder_paused_past_its_lease`). Every master must run
//!    `noeviction` (`a_redlock_master_that_can_evict_fails_the_connect`,
//!    `a_redlock_master_made_unsafe_no_longer_counts_for_the_quorum`).
//! 2. **Tokens grow while a quorum remembers.** A grant's token is the largest
//!    counter of its quorum, written back to a quorum before the grant is
//!    reported (`tokens_strictly_increase_while_masters_die_down_to_the_quorum`,
//!    `reentrant_driver_acquire_keeps_the_written_back_token`,
//!    `masters_that_agree_on_the_token_skip_the_raise_round`). A master
//!    restarted without `appendfsync always` breaks this, and exclusion with it
//!    (two quorums need not share a master that remembers): keep a restarted
//!    master out for the longest TTL, or use `fence_seed=clock`
//!    (`redlock_clock_tokens_rise_over_counters_set_back_on_every_master`).
//! 3. **A wake-up is only a hint**, as in R6: the algorithm's random-delay retry
//!    remains, about once a second
//!    (`a_release_wakes_the_waiter_before_it_would_retry`; no test drops a
//!    message).
//!
//! # TLS
//!
//! With the `tls` feature (lockkit's `tls`; without it, these URLs are a `Config`
//! error naming the feature), `rediss://`, `rediss-cluster://` and
//! `rediss-sentinel://` connect over TLS (rustls with the *ring*
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
//! # Sharing locks with `SET NX` libraries
//!
//! With `?keys=plain` the lock `K` itself is the Redis key `K`, as redis-py's
//! `Lock`, rslock and other `SET K value NX PX ttl` libraries name theirs: see
//! [`KeyLayout::Plain`] for what then holds across libraries, and what does not.
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
//! replicas' subscribers) and moves to another when its node goes away. What a
//! failover can lose is invariant R5.
//!
//! # Waiting
//!
//! A waiting acquire's first attempt both tries the lock and, if it must wait,
//! queues the waiter with its mode — one round trip. A waiter keeps its place
//! until it is granted or gives up. Readers never overtake a writer queued before
//! them, so writers are not starved; by default a writer does not wait behind the
//! queue, and a new `try_lock` may take a free lock before the woken waiter comes,
//! so the driver does not claim `fair`.
//!
//! A **fair** request (`.fair()`, as Redisson's `RFairLock`; the driver claims
//! `fair_on_request`) takes a free key only with no live waiter queued ahead of
//! it, and a fair `try_lock` none past any live waiter; a permit waits behind
//! the permit waiters ahead that fill the free permits. A waiter is live while
//! its entry is (it refreshes it on every attempt, and the entry lapses 3 s
//! after the last), or while it has been woken and not come back (3 s). So a
//! fair waiter whose process died is skipped: on a single server at the next
//! release, whose wake-up finds no subscriber, and on a Cluster, where a publish
//! cannot count subscribers, within those 3 s and as long again
//! (`lockkit-cli/tests/fair_waiters.rs`: 0.8 ms and 3.5 s). Requests that do not
//! ask for fairness still barge: ask for it on every request of the key.
//!
//! A release, a force-release or a waiter giving up wakes exactly the waiters the
//! change admits and that were not woken already: the next writer, or the readers
//! up to the next writer, or one permit waiter per free permit. It publishes to
//! each one's driver only, naming the waiter: never a herd. A reader released
//! while other readers hold wakes nobody. When a wake-up does not come, see
//! invariant R6; with `?wake=poll` waiters only poll, with backoff (polling
//! waiters queue too, so the order holds). A waiter that dies is skipped after
//! its entry's 3 s lifetime; on a single server, one whose process is gone is
//! skipped at once (a Cluster's `PUBLISH` counts only the subscribers on the
//! publishing node, so it cannot tell).
//!
//! # Failure modes
//!
//! - **A dropped connection, or a reply later than `request_timeout_ms`**, does
//!   not fail an acquire at once: the client reconnects, and a waiting acquire
//!   tries again within its wait, a `try_lock` within 250 ms of its start.
//!   Sending an acquire twice is safe (a script that already granted this owner
//!   grants it again, same token), and an attempt whose reply was lost counts as
//!   queued, so the grant takes its entry out of the waiters set
//!   (`tests/lost_replies.rs`). A restarted server that answers `LOADING` while
//!   it loads its dataset is waited out the same way
//!   (`tests/loading_after_restart.rs`).
//! - **A restart** without persistence loses every lock and counter (invariant
//!   R3); **a failover** loses what the replica had not received (R5; what each
//!   setting changes is tabled on [`ReplicaAck`]).
//! - **Redis Cluster.** While a slot is migrating, Redis answers a script whose
//!   keys are only partly moved with TRYAGAIN; a waiting acquire retries through
//!   it, a `try_lock` retries for 250 ms and then reports a retryable `Backend`
//!   error (never a grant). When a master dies, its slots are served by no one
//!   until the other masters agree it failed and promote its replica (the node
//!   timeout, then the vote): meanwhile a waiting acquire takes the refused
//!   connections and unfollowable redirects as transient and retries within its
//!   wait, and the watchdog retries renewals within the lease, so a lease longer
//!   than the failover survives it.
//! - **The wake-up connection** going down is logged once (`wake-ups lost`, then
//!   `wake-ups back`); meanwhile waiters poll (invariant R6).
//!
//! # Server settings
//!
//! - `maxmemory-policy noeviction` (Redis's default), on every server lockkit
//!   writes to; anything else is refused (invariant R4, [`Eviction`]).
//! - `appendonly yes` with `appendfsync always`, for locks and fencing counters
//!   that survive a restart (invariant R3); or `?fence_seed=clock`
//!   ([`FenceSeed`]) for tokens that keep rising without it.
//! - Pub/sub, for woken waiters; without it, `?wake=poll` ([`WakeMode`]).
//!
//! # Using the client you already have
//!
//! [`RedisDriver::from_client`] builds the driver on the application's
//! `redis::Client`, opening its own command connection and wake subscription
//! from it (a `redis::Client` holds none); [`RedisDriver::from_cluster_client`]
//! on a `ClusterClient`, opening its own cluster connection, and there **waiters
//! poll**: a `ClusterClient` does not tell its nodes, so no wake subscription can
//! be opened (`tests/app_client.rs`). Address, credentials and TLS are the
//! client's, and the driver never closes it. Redlock over clients of the
//! application's is not offered yet: connect it by URL.
//!
//! # Timeouts
//!
//! `connect_timeout_ms` (default 2000) and `request_timeout_ms` (each command,
//! default 5000), on every URL ([`RedisOptions::from_url`]). Redlock: 1000 per
//! master to connect and 250 per request to a master (`timeout_ms` is its older
//! name; [`RedlockOptions::from_url`]).
//!
//! # Tested against
//!
//! Real Redis 7.0 servers started by the testkit: the whole conformance suite
//! with pub/sub, with `wake=poll` and over TLS (mutual TLS, a wrong CA, a plain
//! URL to a TLS port: `tests/tls.rs`); a Cluster of 3 masters with a replica
//! each, and 3 TLS-only masters, with a live slot migration during a hold and a
//! hold and its waiter carried across the failover of their master
//! (`tests/cluster.rs`); a master, replicas and sentinels failed over under the
//! driver, plain and TLS (`tests/sentinel.rs`); Redlock on 5 masters, again with
//! 2 of 5 killed mid-case, and 3 of 5 killed failing with a clear quorum error.
//!
//! # Guarantees and limits
//!
//! - Each script of invariant R1 is a file under `scripts/`, sent with EVALSHA
//!   (reloaded on NOSCRIPT).
//! - A watchdog round renews all of a driver's locks in one script call on a single
//!   server; on a cluster, one call per hash slot, sent together so that each
//!   node's connection carries them as one pipeline.
//! - In a cluster, the connection follows MOVED/ASK redirects and refreshes its
//!   slot map, so locking keeps working while slots migrate.
//! - **Redlock** ([`RedlockDriver`]) over `N` independent masters: invariants
//!   RL1–RL3. Its waiters join the lock's waiters queue on every master, and
//!   each master's release wakes the earliest live one there (the same one on
//!   every master: see its "Wake-ups") through the same wake channels as the
//!   single-server driver (one subscription per master;
//!   `?wake=poll`: the random-delay retry only).

mod acquire;
mod acquire_all;
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

use lockkit_core::driver::{Driver, DriverEntry, LockDriver};

/// How the `lockkit` facade finds the single-server and Cluster driver.
pub const DRIVER: DriverEntry = DriverEntry::of::<RedisDriver>();

/// How the `lockkit` facade finds the Redlock driver.
pub const REDLOCK_DRIVER: DriverEntry = DriverEntry::of::<RedlockDriver>();

impl Driver for RedisDriver {
    const NAME: &'static str = driver::NAME;
    const URL_SCHEMES: &'static [&'static str] = url::SCHEMES;
    type Options = RedisOptions;

    fn options(url: &str) -> lockkit_core::Result<RedisOptions> {
        RedisOptions::from_url(url)
    }

    async fn connect(options: RedisOptions) -> lockkit_core::Result<Arc<dyn LockDriver>> {
        Ok(Arc::new(RedisDriver::connect(options).await?))
    }
}

impl Driver for RedlockDriver {
    const NAME: &'static str = redlock::NAME;
    const URL_SCHEMES: &'static [&'static str] = redlock::SCHEMES;
    type Options = RedlockOptions;

    fn options(url: &str) -> lockkit_core::Result<RedlockOptions> {
        RedlockOptions::from_url(url)
    }

    async fn connect(options: RedlockOptions) -> lockkit_core::Result<Arc<dyn LockDriver>> {
        Ok(Arc::new(RedlockDriver::connect(options).await?))
    }
}
