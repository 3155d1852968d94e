//! The conformance suite against real etcd from the testkit: a single node, and a
//! 3-node cluster reached through all three endpoints; each over plain TCP and over
//! TLS (`etcds://` with the testkit's throwaway CA in `tls_ca`).

use std::sync::Arc;

use lockkit_conformance::{UrlHarness, url_backend};
use lockkit_core::{LockDriver, LockError};
use lockkit_etcd::{EtcdDriver, EtcdOptions};
use lockkit_testkit::{Etcd, EtcdCluster};

async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
    Ok(Arc::new(
        EtcdDriver::connect(EtcdOptions::from_url(url)?).await?,
    ))
}

url_backend!(
    /// One node.
    Single: Etcd = Etcd::start(), |s| s.url(), connect
);
url_backend!(
    /// Three nodes, reached through all three endpoints.
    Cluster: EtcdCluster = EtcdCluster::start(3), |s| s.url(), connect
);
url_backend!(
    /// One node over TLS (`etcds://…?tls_ca=`).
    TlsSingle: Etcd = Etcd::start_tls(),
    |s| {
        let url = s.url();
        assert!(url.starts_with("etcds://"), "{url}");
        url
    },
    connect
);
url_backend!(
    /// Three nodes over TLS.
    TlsCluster: EtcdCluster = EtcdCluster::start_tls(3),
    |s| {
        let url = s.url();
        assert!(url.starts_with("etcds://"), "{url}");
        url
    },
    connect
);

/// The whole suite with every optional case etcd claims: `fair`, and inspection
/// with waiter counts.
macro_rules! etcd_suite {
    ($name:ident, $backend:ty) => {
        lockkit_conformance::suite!(
            $name,
            UrlHarness<$backend>,
            with {
                fifo_order,
                readers_share,
                writer_excludes_readers_and_writers,
                read_write_order_is_fifo,
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
                observe_wakes_on_the_backend_signal,
                held_locks_are_listed_by_prefix,
                proclaim_is_seen_by_leader_and_observe,
                inspection_counts_waiters,
            }
        );
    };
}

etcd_suite!(etcd, Single);
etcd_suite!(etcd_cluster, Cluster);
etcd_suite!(etcd_tls, TlsSingle);
etcd_suite!(etcd_tls_cluster, TlsCluster);

url_backend!(
    /// One node with etcd's default timing, as users run it: no lease under 2 s.
    DefaultFlags: Etcd = Etcd::start_with_default_flags(), |s| s.url(), connect
);

etcd_suite!(etcd_default_flags, DefaultFlags);
