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

use lockkit_conformance::{UrlHarness, url_backend};
use lockkit_core::{LockDriver, LockError};
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

/// The whole suite with every optional case the driver claims (`fair`, `shared`,
/// permits, inspection); the lease-expiry cases do not apply to session-bound holds.
macro_rules! zk_suite {
    ($name:ident, $backend:ty) => {
        lockkit_conformance::suite!(
            $name,
            UrlHarness<$backend>,
            skip {
                expired_lease_is_reacquirable: "session-bound: a hold lasts as long as its session, there is no per-lock lease to expire",
                release_never_deletes_a_newer_holders_lock: "needs lease expiry; release_after_the_hold_vanished_never_touches_the_new_holder proves the same with the node deleted",
            },
            with {
                fifo_order,
                readers_share,
                writer_excludes_readers_and_writers,
                read_write_order_is_fifo,
                read_hold_is_not_upgraded,
                at_most_limit_permits_under_contention,
                permit_tokens_increase_across_permits,
                a_permit_limit_mismatch_is_a_config_error,
                a_release_wakes_one_waiter,
                a_cancelled_permit_acquire_leaves_nothing,
                a_killed_holders_permit_is_freed,
                inspection_shows_holder_mode_token_and_lease,
                a_free_key_inspects_empty,
                the_leader_is_shown_with_its_value_term_and_label,
                observe_sees_every_change_in_order,
                observe_wakes_on_the_backend_signal,
                held_locks_are_listed_by_prefix,
                proclaim_is_seen_by_leader_and_observe,
                inspection_counts_waiters,
            }
        );
    };
}

zk_suite!(zk, Standalone);
zk_suite!(zk_tls, StandaloneTls);
zk_suite!(zk_ensemble, Ensemble);
zk_suite!(zk_ensemble_losing_a_member, EnsembleLosingAMember);

// kazoo's names: lockkit's own semaphores and listing do not apply.
lockkit_conformance::suite!(
    zk_kazoo_recipe,
    UrlHarness<StandaloneKazoo>,
    skip {
        expired_lease_is_reacquirable: "session-bound: a hold lasts as long as its session, there is no per-lock lease to expire",
        release_never_deletes_a_newer_holders_lock: "needs lease expiry; release_after_the_hold_vanished_never_touches_the_new_holder proves the same with the node deleted",
        unicode_keys_labels_and_values_round_trip: "with recipe=kazoo the key is a ZooKeeper path, which cannot hold characters outside the Basic Multilingual Plane: such keys are refused with Config (recipe.rs)",
    },
    with {
        fifo_order,
        readers_share,
        writer_excludes_readers_and_writers,
        read_write_order_is_fifo,
        read_hold_is_not_upgraded,
        inspection_shows_holder_mode_token_and_lease,
        a_free_key_inspects_empty,
        the_leader_is_shown_with_its_value_term_and_label,
        observe_sees_every_change_in_order,
        observe_wakes_on_the_backend_signal,
        proclaim_is_seen_by_leader_and_observe,
        inspection_counts_waiters,
    }
);
