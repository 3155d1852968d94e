//! Rows where Redis can lose what it was told: a restart with and without
//! persistence, and a failover to an asynchronously replicated replica, under
//! Sentinel or in a Cluster, with the replicas in sync or lagging. What each row
//! may lose is what the README says.

use super::failover::{Replicated, Unreplicated, failover_before_replication};
use super::*;

/// Sentinel failover during a hold, as deployed by default: the promoted replica
/// has what was replicated before the master died. On one machine replication is
/// fast, so the history usually shows nothing lost; the row records what it shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_sentinel_failover_during_a_hold() {
    let mut group = sentinels().await;
    let url = group.url();
    failover_during_a_hold("redis sentinel", &url, FAILOVER_PROMISE, &mut group).await;
}

/// The same with `wait_replicas=1`: every grant and renewal was acknowledged by a
/// replica before it counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_sentinel_failover_with_wait_replicas() {
    let mut group = sentinels().await;
    let url = format!("{}?wait_replicas=1", group.url());
    let backend = "redis sentinel (wait_replicas=1)";
    failover_during_a_hold(backend, &url, FAILOVER_PROMISE, &mut group).await;
}

/// The same with `fence_seed=clock`: tokens never fall below the server's clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_sentinel_failover_with_clock_seeded_tokens() {
    let mut group = sentinels().await;
    let url = format!("{}?fence_seed=clock", group.url());
    let backend = "redis sentinel (fence_seed=clock)";
    failover_during_a_hold(backend, &url, FAILOVER_PROMISE, &mut group).await;
}

/// The danger itself: the replicas lag (cut off), the master grants the lock and
/// dies, and the promoted replica has neither the grant nor its counter bump. It
/// grants the lock again with the same token, while the first holder still
/// believes it holds (until its next renewal finds nothing), and the resource,
/// which accepts a token equal to the highest it saw, takes both holders' writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_sentinel_failover_before_replicating_repeats_a_token() {
    let mut group = sentinels().await;
    let url = group.url();
    let v = lagging("redis sentinel", &url, Unreplicated::Granted, &mut group).await;
    assert!(!v.token_regressions.is_empty(), "{v:?}");
}

/// With `wait_replicas=1` the grant no replica acknowledged is given back, and no
/// worker is told it holds it: nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_sentinel_failover_before_replicating_with_wait_replicas_loses_nothing() {
    let mut group = sentinels().await;
    let url = format!("{}?wait_replicas=1", group.url());
    let backend = "redis sentinel (wait_replicas=1)";
    let v = lagging(backend, &url, Unreplicated::Refused, &mut group).await;
    assert!(v.is_safe(), "{v:?}");
}

/// With `fence_seed=clock` the promoted replica's counter is behind, but tokens
/// stay above the clock: the second holder's token is higher, and the resource
/// refuses the first holder's writes. The lock itself was still granted twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_sentinel_failover_before_replicating_with_clock_tokens_keeps_fencing() {
    let mut group = sentinels().await;
    let url = format!("{}?fence_seed=clock", group.url());
    let backend = "redis sentinel (fence_seed=clock)";
    let v = lagging(backend, &url, Unreplicated::Granted, &mut group).await;
    assert!(v.token_regressions.is_empty(), "{v:?}");
    assert_eq!(v.stale_accepted, 0, "{v:?}");
}

/// A master, 2 replicas and 3 sentinels.
async fn sentinels() -> RedisSentinels {
    let group = RedisSentinels::start(2, 3).await.unwrap();
    group.wait_until_watched().await.unwrap();
    group
}

/// A Cluster of 3 masters with a replica each: the master that serves the lock's
/// slot is killed during a hold, and the other masters promote its replica. The
/// slot is unserved from the kill until the promotion (the cluster's node timeout,
/// 2 s here, then the vote); the driver's cluster client follows the new map.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster_failover_during_a_hold() {
    let mut cluster = RedisCluster::start_replicated(3, 1).await.unwrap();
    let url = cluster.url();
    failover_during_a_hold("redis cluster", &url, FAILOVER_PROMISE, &mut cluster).await;
}

/// The Cluster with the replica of the lock's master lagging: as under Sentinel,
/// the promoted replica grants the lock again with the same token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster_failover_before_replicating_repeats_a_token() {
    let mut cluster = RedisCluster::start_replicated(3, 1).await.unwrap();
    let url = cluster.url();
    let v = lagging("redis cluster", &url, Unreplicated::Granted, &mut cluster).await;
    assert!(!v.token_regressions.is_empty(), "{v:?}");
}

/// And with `wait_replicas=1`, which waits on the master of the lock's slot. Each
/// master has 2 replicas here: with one, the promoted replica would have none
/// left to acknowledge, and every grant in its slots would be refused until one
/// joined.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster_failover_before_replicating_with_wait_replicas_loses_nothing() {
    let mut cluster = RedisCluster::start_replicated(3, 2).await.unwrap();
    let url = format!("{}?wait_replicas=1", cluster.url());
    let backend = "redis cluster (wait_replicas=1)";
    let v = lagging(backend, &url, Unreplicated::Refused, &mut cluster).await;
    assert!(v.is_safe(), "{v:?}");
}

/// And with `fence_seed=clock`, whose tokens keep rising there too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster_failover_before_replicating_with_clock_tokens_keeps_fencing() {
    let mut cluster = RedisCluster::start_replicated(3, 1).await.unwrap();
    let url = format!("{}?fence_seed=clock", cluster.url());
    let backend = "redis cluster (fence_seed=clock)";
    let v = lagging(backend, &url, Unreplicated::Granted, &mut cluster).await;
    assert!(v.token_regressions.is_empty(), "{v:?}");
    assert_eq!(v.stale_accepted, 0, "{v:?}");
}

/// [`failover_before_replication`] with the README's promise for a failover.
async fn lagging(
    backend: &'static str,
    url: &str,
    unreplicated: Unreplicated,
    group: &mut impl Replicated,
) -> Verdict {
    failover_before_replication(backend, url, FAILOVER_PROMISE, unreplicated, group).await
}

/// What the README says of a failover, under Sentinel or in a Cluster.
const FAILOVER_PROMISE: Promise = Promise::Documented(
    "a failover to an asynchronously replicated replica can lose the last grants and \
     counter bumps: two holders, and a repeated token unless fence_seed=clock, are \
     possible; wait_replicas narrows the window",
);

/// Redis with `appendfsync always`: a restart keeps locks and counters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_with_fsynced_aof_killed_and_restarted_stays_safe() {
    let mut server = Redis::start_persistent().await.unwrap();
    server_restarted!(
        "redis (appendfsync always)",
        Primitive::Lock,
        server.url(),
        server,
        Promise::Safe
    );
}

/// Redis without persistence: a restart forgets the lock and the fencing counter.
/// The counter starts again and tokens go backwards; the worker that held the lock
/// through the restart is not told until its next renewal, and its later write is
/// accepted by the resource (it has the higher token) while the new holder's is
/// refused — what the README says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_without_persistence_restarted_resets_the_token_counter() {
    let mut server = Redis::start().await.unwrap();
    let url = server.url();
    let v = redis_restarted_during_a_hold(
        "redis (no persistence)",
        &url,
        &mut server,
        Promise::Documented(
            "a restart without persistence loses locks and fencing counters: tokens \
             start again from 1, so the resource refuses the new holder and accepts the \
             old one",
        ),
    )
    .await;
    assert!(
        !v.token_regressions.is_empty(),
        "the restart should have reset the token counter: {v:?}"
    );
}

/// The mitigation: with `?fence_seed=clock` the counter Redis lost starts again from
/// the server's clock, above every token handed out before, so tokens keep rising and
/// the resource refuses the old holder. The lock itself is still lost: until the old
/// holder's next renewal fails, two clients can believe they hold it (documented).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_without_persistence_restarted_with_clock_seeded_tokens_keeps_tokens_rising() {
    let mut server = Redis::start().await.unwrap();
    let url = format!("{}?fence_seed=clock", server.url());
    let v = redis_restarted_during_a_hold(
        "redis (no persistence, fence_seed=clock)",
        &url,
        &mut server,
        Promise::Documented(
            "a restart without persistence loses the lock; until the old holder's next \
             renewal fails, two clients can believe they hold it (fencing still refuses \
             the old holder)",
        ),
    )
    .await;
    assert!(
        v.token_regressions.is_empty(),
        "tokens went backwards: {v:?}"
    );
    assert_eq!(v.stale_accepted, 0, "{v:?}");
}
