//! The conformance suite against real etcd from the testkit: a single node, and a
//! 3-node cluster reached through all three endpoints; each over plain TCP and over
//! TLS (`etcds://` with the testkit's throwaway CA in `tls_ca`).

use std::sync::Arc;

use lockkit_conformance::{UrlHarness, url_backend};
use lockkit_core::{Capabilities, Inspect, LockDriver, LockError, WakeUp};
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

url_backend!(
    /// One node with etcd's default timing, as users run it: no lease under 2 s.
    DefaultFlags: Etcd = Etcd::start_with_default_flags(), |s| s.url(), connect
);

/// Everything: etcd runs every optional case.
const ETCD: Capabilities = Capabilities::baseline()
    .with_shared(true)
    .with_permits(true)
    .with_fair(true)
    .with_inspect(Inspect::HoldersAndWaiters)
    .with_wake_up(WakeUp::Notify)
    .with_proclaim(true)
    .with_list(true)
    .with_watch(true)
    .with_several_keys_at_once(true);

lockkit_conformance::main! {
    etcd: UrlHarness<Single>, claims ETCD;
    etcd_cluster: UrlHarness<Cluster>, claims ETCD;
    etcd_tls: UrlHarness<TlsSingle>, claims ETCD;
    etcd_tls_cluster: UrlHarness<TlsCluster>, claims ETCD;
    etcd_default_flags: UrlHarness<DefaultFlags>, claims ETCD;
}
