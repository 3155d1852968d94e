//! The conformance suite against real Redis servers from the testkit: a single
//! server (woken by pub/sub, polling only, and with `keys=plain`), a master with
//! a replica behind a sentinel, a Redis Cluster of 3 masters with a replica each,
//! and over TLS a single server, a 3-master Cluster and a Sentinel group
//! (`rediss://`, the URL carrying the throwaway CA, so the killed-holder child
//! process connects with it too).

use std::sync::Arc;

use lockkit_conformance::UrlHarness;
use lockkit_conformance::url_backend;
use lockkit_core::{Capabilities, Inspect, LockDriver, LockError, WakeUp};
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

/// A single server's, woken by pub/sub: the mutex, read-write locks, the
/// semaphore, inspection with waiter counts, fairness on request, elections,
/// and listing.
const REDIS: Capabilities = Capabilities::baseline()
    .with_shared(true)
    .with_permits(true)
    .with_wake_up(WakeUp::Notify)
    .with_inspect(Inspect::HoldersAndWaiters)
    .with_fair_on_request(true)
    .with_proclaim(true)
    .with_list(true)
    .with_several_keys_at_once(true);

/// Listing needs every lock on one server, under lockkit's own key names: not
/// with `keys=plain`.
const UNLISTED: Capabilities = REDIS.with_list(false);

/// Nor on a Cluster, where several locks are in several slots: taken one by one.
const CLUSTER: Capabilities = UNLISTED.with_several_keys_at_once(false);

lockkit_conformance::main! {
    redis: UrlHarness<Single>, claims REDIS;
    redis_cluster: UrlHarness<Cluster>, claims CLUSTER;
    redis_polling: UrlHarness<SinglePolling>, claims REDIS.with_wake_up(WakeUp::Poll);
    redis_plain: UrlHarness<SinglePlain>, claims UNLISTED;
    redis_sentinel: UrlHarness<Sentinel>, claims REDIS;
    redis_tls: UrlHarness<Tls>, claims REDIS;
    redis_tls_cluster: UrlHarness<TlsCluster>, claims CLUSTER;
    redis_tls_sentinel: UrlHarness<TlsSentinel>, claims REDIS;
}
