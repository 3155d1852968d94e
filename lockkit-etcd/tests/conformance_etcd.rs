//! The conformance suite against real etcd from the testkit: a single node, and a
//! 3-node cluster reached through all three endpoints; each over plain TCP and over
//! TLS (`etcds://` with the testkit's throwaway CA in `tls_ca`).

#![allow(clippy::unwrap_used, clippy::panic)] // Tests fail by panicking.

use std::sync::Arc;

use lockkit_conformance::{UrlBackend, UrlHarness};
use lockkit_core::{LockDriver, LockError};
use lockkit_etcd::{EtcdDriver, EtcdOptions};
use lockkit_testkit::{Etcd, EtcdCluster};

async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
    Ok(Arc::new(
        EtcdDriver::connect(EtcdOptions::from_url(url)?).await?,
    ))
}

struct Single;

#[lockkit_core::async_trait]
impl UrlBackend for Single {
    type Server = Etcd;
    async fn start() -> (Etcd, String) {
        let server = Etcd::start().await.unwrap();
        let url = server.url();
        (server, url)
    }
    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
        connect(url).await
    }
}

struct Cluster;

#[lockkit_core::async_trait]
impl UrlBackend for Cluster {
    type Server = EtcdCluster;
    async fn start() -> (EtcdCluster, String) {
        let cluster = EtcdCluster::start(3).await.unwrap();
        let url = cluster.url();
        (cluster, url)
    }
    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
        connect(url).await
    }
}

struct TlsSingle;

#[lockkit_core::async_trait]
impl UrlBackend for TlsSingle {
    type Server = Etcd;
    async fn start() -> (Etcd, String) {
        let server = Etcd::start_tls().await.unwrap();
        let url = server.url();
        assert!(url.starts_with("etcds://"), "{url}");
        (server, url)
    }
    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
        connect(url).await
    }
}

struct TlsCluster;

#[lockkit_core::async_trait]
impl UrlBackend for TlsCluster {
    type Server = EtcdCluster;
    async fn start() -> (EtcdCluster, String) {
        let cluster = EtcdCluster::start_tls(3).await.unwrap();
        let url = cluster.url();
        assert!(url.starts_with("etcds://"), "{url}");
        (cluster, url)
    }
    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
        connect(url).await
    }
}

lockkit_conformance::suite!(etcd, UrlHarness<Single>, with { fifo_order });
lockkit_conformance::suite!(etcd_cluster, UrlHarness<Cluster>, with { fifo_order });
lockkit_conformance::suite!(etcd_tls, UrlHarness<TlsSingle>, with { fifo_order });
lockkit_conformance::suite!(
    etcd_tls_cluster,
    UrlHarness<TlsCluster>,
    with { fifo_order }
);
