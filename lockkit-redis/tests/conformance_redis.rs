//! The conformance suite against real Redis servers from the testkit: a single
//! server (woken by pub/sub, polling only, and with `keys=plain`), a master with
//! a replica behind a sentinel, a Redis Cluster of 3 masters with a replica each,
//! and over TLS a single server, a 3-master Cluster and a Sentinel group
//! (`rediss://`, the URL carrying the throwaway CA, so the killed-holder child
//! process connects with it too).

use std::sync::Arc;

use lockkit_conformance::UrlHarness;
use lockkit_conformance::url_backend;
use lockkit_core::{LockDriver, LockError};
use lockkit_redis::{RedisDriver, RedisOptions};
use lockkit_testkit::{Redis, RedisCluster, RedisSentinels};

async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
    Ok(Arc::new(
        RedisDriver::connect(RedisOptions::from_url(url)?).await?,
    ))
}

url_backend!(
    /// One server; waiters woken by pub/sub.
    Single: Redis = Redis::start(), |s| s.url(), connect
);
url_backend!(
    /// The same, with waiters polling instead of being woken.
    SinglePolling: Redis = Redis::start(), |s| format!("{}?wake=poll", s.url()), connect
);
url_backend!(
    /// The same, each lock under its key's own name (`keys=plain`), as `SET NX`
    /// libraries name theirs.
    SinglePlain: Redis = Redis::start(), |s| format!("{}?keys=plain", s.url()), connect
);
url_backend!(
    /// Three masters with a replica each, all slots assigned; the lock keys of one
    /// case spread over them. The URL names every node, the replicas too.
    Cluster: RedisCluster = RedisCluster::start_replicated(3, 1), |s| s.url(), connect
);
url_backend!(
    /// A master with one replica, found through a sentinel
    /// (`redis-sentinel://…/lockkit`). Failover is in the reliability suite.
    Sentinel: RedisSentinels = RedisSentinels::start(1, 1), |s| s.url(), connect
);
url_backend!(
    /// A TLS-only server (`rediss://…?tls_ca=`).
    Tls: Redis = Redis::start_tls(), |s| s.url(), connect
);
url_backend!(
    /// A TLS-only master, replica and sentinel with one CA
    /// (`rediss-sentinel://…/lockkit?tls_ca=`).
    TlsSentinel: RedisSentinels = RedisSentinels::start_tls(1, 1), |s| s.url(), connect
);
url_backend!(
    /// Three TLS-only masters with one CA (`rediss-cluster://…?tls_ca=`).
    TlsCluster: RedisCluster = RedisCluster::start_tls(3), |s| s.url(), connect
);

/// Every Redis suite: the mutex, read-write locks, the semaphore, inspection
/// (holders and waiters) and elections; then the cases only some topologies
/// pass (listing: a single server, not a Cluster).
macro_rules! redis_suite {
    ($name:ident, $backend:ty $(, $extra:ident)*) => {
        lockkit_conformance::suite!(
            $name,
            UrlHarness<$backend>,
            with {
                readers_share,
                writer_excludes_readers_and_writers,
                read_hold_is_not_upgraded,
                at_most_limit_permits_under_contention,
                permit_tokens_increase_across_permits,
                an_expired_permit_is_reacquirable,
                a_permit_limit_mismatch_is_a_config_error,
                a_release_wakes_one_waiter,
                a_cancelled_permit_acquire_leaves_nothing,
                a_killed_holders_permit_is_freed,
                inspection_shows_holder_mode_token_and_lease,
                a_free_key_inspects_empty,
                the_leader_is_shown_with_its_value_term_and_label,
                observe_sees_every_change_in_order,
                proclaim_is_seen_by_leader_and_observe,
                inspection_counts_waiters,
                $($extra,)*
            }
        );
    };
}

redis_suite!(redis, Single, held_locks_are_listed_by_prefix);
redis_suite!(redis_cluster, Cluster);
redis_suite!(
    redis_polling,
    SinglePolling,
    held_locks_are_listed_by_prefix
);
redis_suite!(redis_plain, SinglePlain);
redis_suite!(redis_sentinel, Sentinel, held_locks_are_listed_by_prefix);
redis_suite!(redis_tls, Tls, held_locks_are_listed_by_prefix);
redis_suite!(redis_tls_cluster, TlsCluster);
redis_suite!(
    redis_tls_sentinel,
    TlsSentinel,
    held_locks_are_listed_by_prefix
);
