//! Rows where Redis can lose what it was told: a restart with and without
//! persistence, and a failover to an asynchronously replicated replica, under
//! Sentinel or in a Cluster. What each row may lose is what the README says.

use super::*;

/// Sentinel failover during a hold, as deployed by default: the promoted replica
/// has what was replicated before the master died. On one machine replication is
/// fast, so the history usually shows nothing lost; the row records what it shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_sentinel_failover_during_a_hold() {
    let group = RedisSentinels::start(2, 3).await.unwrap();
    let url = group.url();
    sentinel_failover("redis sentinel", &url, group).await;
}

/// The same with `wait_replicas=1`: every grant and renewal was acknowledged by a
/// replica before it counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_sentinel_failover_with_wait_replicas() {
    let group = RedisSentinels::start(2, 3).await.unwrap();
    let url = format!("{}?wait_replicas=1", group.url());
    sentinel_failover("redis sentinel (wait_replicas=1)", &url, group).await;
}

/// The same with `fence_seed=clock`: a counter the promoted replica lacks starts
/// from the server's clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_sentinel_failover_with_clock_seeded_tokens() {
    let group = RedisSentinels::start(2, 3).await.unwrap();
    let url = format!("{}?fence_seed=clock", group.url());
    sentinel_failover("redis sentinel (fence_seed=clock)", &url, group).await;
}

/// Once the sentinels watch every node, the Sentinel failover of
/// [`failover_during_a_hold`].
async fn sentinel_failover(backend: &'static str, url: &str, mut group: RedisSentinels) {
    group.wait_until_watched().await.unwrap();
    failover_during_a_hold(backend, url, FAILOVER_PROMISE, |_| {
        group.fail_over(RECOVERY_LIMIT)
    })
    .await;
}

/// A Cluster of 3 masters with a replica each: the master that serves the lock's
/// slot is killed during a hold, and the other masters promote its replica. The
/// slot is unserved from the kill until the promotion (the cluster's node timeout,
/// 2 s here, then the vote); the driver's cluster client follows the new map.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster_failover_during_a_hold() {
    let mut cluster = RedisCluster::start_replicated(3, 1).await.unwrap();
    let url = cluster.url();
    // Borrowed, not moved: the cluster must outlive the fault.
    let nodes = &mut cluster;
    failover_during_a_hold("redis cluster", &url, FAILOVER_PROMISE, |key| async move {
        nodes.fail_over_master_of(&key, RECOVERY_LIMIT).await
    })
    .await;
}

/// What the README says of a failover, under Sentinel or in a Cluster.
const FAILOVER_PROMISE: Promise = Promise::Documented(
    "a failover to an asynchronously replicated replica can lose the last grants and \
     counter bumps: two holders, or a token that repeats, are possible; the resource's \
     fencing refuses the older holder's writes",
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
