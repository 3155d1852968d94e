//! The conformance suite, mutex and read-write cases, against real ZooKeeper 3.8
//! from the testkit: a standalone server, the same over TLS (`zks://`, its
//! `secureClientPort`), a 3-node ensemble, and a 3-node ensemble that loses a member
//! while the case runs.
//!
//! Sessions are asked for 1 s (the testkit's servers tick every 200 ms), so a
//! killed holder process's lock is freed about a second after the kill, as the
//! `abandoned_by_killed_process_is_freed_after_ttl` case expects of its 1 s TTL.

use std::sync::Arc;
use std::time::Duration;

use lockkit_conformance::{Skips, UrlHarness, url_backend};
use lockkit_core::{Capabilities, Inspect, LockDriver, LockError, WakeUp};
use lockkit_testkit::{TestkitError, ZooKeeper, ZooKeeperEnsemble};
use lockkit_zk::{ZkDriver, ZkOptions};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
    Ok(Arc::new(
        ZkDriver::connect(ZkOptions::from_url(url)?).await?,
    ))
}

const SESSION: &str = "session_timeout_ms=1000";

/// A 3-node ensemble whose third-ranked member (a follower the clients are not
/// given) is killed with SIGKILL 150 ms into the case; the other two keep a quorum.
struct LosingAMember {
    url: String,
    _ensemble: Arc<Mutex<ZooKeeperEnsemble>>,
    killer: JoinHandle<()>,
}

impl Drop for LosingAMember {
    fn drop(&mut self) {
        self.killer.abort();
    }
}

async fn ensemble_losing_a_member() -> Result<LosingAMember, TestkitError> {
    let ensemble = ZooKeeperEnsemble::start(3).await?;
    let leader = ensemble.leader().await.unwrap_or(0);
    let victim = (leader + 2) % 3;
    let kept: Vec<String> = (0..3)
        .filter(|i| *i != victim)
        .map(|i| ensemble.members[i].address())
        .collect();
    let url = format!("zk://{}?{SESSION}", kept.join(","));
    let ensemble = Arc::new(Mutex::new(ensemble));
    let killer = tokio::spawn({
        let ensemble = ensemble.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(150)).await;
            ensemble.lock().await.members[victim].kill();
        }
    });
    Ok(LosingAMember {
        url,
        _ensemble: ensemble,
        killer,
    })
}

url_backend!(
    /// A standalone server.
    Standalone: ZooKeeper = ZooKeeper::start(), |s| format!("{}?{SESSION}", s.url()), connect
);
url_backend!(
    /// A standalone server, the queue nodes named as kazoo names its locks'
    /// (`recipe=kazoo`: the key is the lock's path).
    StandaloneKazoo: ZooKeeper = ZooKeeper::start(),
    |s| format!("{}?{SESSION}&recipe=kazoo", s.url()),
    connect
);
url_backend!(
    /// A standalone server, over TLS with a client certificate.
    StandaloneTls: ZooKeeper = ZooKeeper::start_tls(true),
    |s| format!("{}&{SESSION}", s.url()),
    connect
);
url_backend!(
    /// Three members, reached through all three.
    Ensemble: ZooKeeperEnsemble = ZooKeeperEnsemble::start(3),
    |s| format!("{}?{SESSION}", s.url()),
    connect
);
url_backend!(
    /// Three members, one killed 150 ms into the case.
    EnsembleLosingAMember: LosingAMember = ensemble_losing_a_member(),
    |s| s.url.clone(),
    connect
);

/// Every optional case: fair queues, read-write locks, semaphores, inspection
/// with waiter counts, elections, listing and watches.
const ZK: Capabilities = Capabilities::baseline()
    .with_shared(true)
    .with_permits(true)
    .with_inspect(Inspect::HoldersAndWaiters)
    .with_proclaim(true)
    .with_list(true)
    .with_watch(true)
    .with_fair(true)
    .with_lease_expiry(false)
    .with_wake_up(WakeUp::Notify);

/// kazoo's names (`recipe=kazoo`): lockkit's own semaphores and listing do not
/// apply.
const KAZOO: Capabilities = ZK.with_permits(false).with_list(false);

/// A hold lasts as long as its session.
const SESSION_BOUND: Skips = &[
    (
        "expired_lease_is_reacquirable",
        "session-bound: a hold lasts as long as its session, there is no per-lock lease to expire",
    ),
    (
        "release_never_deletes_a_newer_holders_lock",
        "needs lease expiry; release_after_the_hold_vanished_never_touches_the_new_holder proves the same with the node deleted",
    ),
];

/// With `recipe=kazoo` the key is a ZooKeeper path.
const KAZOO_SKIPS: Skips = &[
    SESSION_BOUND[0],
    SESSION_BOUND[1],
    (
        "unicode_keys_labels_and_values_round_trip",
        "with recipe=kazoo the key is a ZooKeeper path, which cannot hold characters outside the Basic Multilingual Plane: such keys are refused with Config (recipe.rs)",
    ),
];

lockkit_conformance::main! {
    zk: UrlHarness<Standalone>, claims ZK, skip SESSION_BOUND;
    zk_tls: UrlHarness<StandaloneTls>, claims ZK, skip SESSION_BOUND;
    zk_ensemble: UrlHarness<Ensemble>, claims ZK, skip SESSION_BOUND;
    zk_ensemble_losing_a_member: UrlHarness<EnsembleLosingAMember>, claims ZK, skip SESSION_BOUND;
    zk_kazoo_recipe: UrlHarness<StandaloneKazoo>, claims KAZOO, skip KAZOO_SKIPS;
}
