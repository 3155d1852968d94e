//! Failover faults on replicated Redis (a Sentinel group, a Cluster with
//! replicas): the master killed during a hold, after replicating everything or
//! after handing out a grant no replica has.

use super::*;

/// A replicated Redis whose master can be cut off its replicas, and killed for a
/// replica to take over.
pub(crate) trait Replicated {
    /// Cuts the replicas of the master that serves `key` off it (they are paused,
    /// and the master drops their links): from now on they receive nothing.
    /// Returns that master.
    async fn cut_replicas(&mut self, key: &str) -> &Redis;

    /// Kills the master that serves `key`, resumes replicas that were cut off, and
    /// returns once a replica is promoted and serves `key`.
    async fn fail_over(&mut self, key: &str);
}

impl Replicated for RedisSentinels {
    async fn cut_replicas(&mut self, _: &str) -> &Redis {
        let port = RedisSentinels::cut_replicas(self).await.unwrap();
        self.nodes.iter().find(|n| n.port() == port).unwrap()
    }

    async fn fail_over(&mut self, _: &str) {
        RedisSentinels::fail_over(self, RECOVERY_LIMIT)
            .await
            .unwrap();
    }
}

impl Replicated for RedisCluster {
    async fn cut_replicas(&mut self, key: &str) -> &Redis {
        let port = self.cut_replicas_of(key).await.unwrap();
        self.nodes.iter().find(|n| n.port() == port).unwrap()
    }

    async fn fail_over(&mut self, key: &str) {
        self.fail_over_master_of(key, RECOVERY_LIMIT).await.unwrap();
    }
}

/// The workers run on `url`; while one of them holds the lock, the master that
/// serves it is killed and a replica promoted. What asynchronous replication lost
/// shows in the history; recovery counts from the kill, the failover included.
pub(crate) async fn failover_during_a_hold(
    backend: &'static str,
    url: &str,
    promise: Promise,
    group: &mut impl Replicated,
) -> Verdict {
    let mut trial = Trial::new(backend, "master failed over while a lock is held");
    let running = workers_holding(&mut trial, url).await;
    let killed = Instant::now();
    group.fail_over(&trial.key).await;
    trial.finish(running, killed, killed, promise).await
}

/// What the workers hear of the grant the master makes after its replicas are
/// cut off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unreplicated {
    /// It is granted: the master is killed once a worker holds it.
    Granted,
    /// It is refused and given back (`wait_replicas`): the master is killed as
    /// soon as it has made it.
    Refused,
}

/// How long the workers hold the lock in the lagging-replica rows, and their
/// lease: both outlast the failover (about 2.5 s here), as holds and leases in
/// production do, so that the old holder still believes it holds when the
/// promoted replica grants again.
const LAGGING_HOLD: Duration = Duration::from_secs(3);
const LAGGING_TTL: Duration = Duration::from_secs(4);

/// The workers run on `url`. The replicas of the master that serves the lock are
/// cut off, as when replication lags; once the master has made a grant (its
/// fencing counter moved) and, for [`Unreplicated::Granted`], a worker holds it,
/// the master is killed and a replica that never saw that grant is promoted.
pub(crate) async fn failover_before_replication(
    backend: &'static str,
    url: &str,
    promise: Promise,
    unreplicated: Unreplicated,
    group: &mut impl Replicated,
) -> Verdict {
    let mut trial = Trial::new(backend, "master failed over before replicating a grant");
    (trial.hold, trial.ttl) = (LAGGING_HOLD, LAGGING_TTL);
    let running = trial.start_workers(url).await;
    let started = Instant::now();
    let master = group.cut_replicas(&trial.key).await;
    let counter = format!("GET lockkit:{{{}}}:fence", trial.key);
    let at_cut = master.ask(&counter).await;
    let limit = Instant::now() + RECOVERY_LIMIT;
    let token = loop {
        let now = master.ask(&counter).await;
        if now != at_cut {
            break now.and_then(|v| v.first()?.parse::<u64>().ok()).unwrap();
        }
        assert!(Instant::now() < limit, "{backend}: no grant after the cut");
        sleep(Duration::from_millis(5)).await;
    };
    if unreplicated == Unreplicated::Granted {
        trial
            .wait_until("the unreplicated grant held", |h| {
                h.grants.iter().any(|g| g.token == token)
            })
            .await;
    }
    let killed = Instant::now();
    group.fail_over(&trial.key).await;
    trial.finish(running, started, killed, promise).await
}
