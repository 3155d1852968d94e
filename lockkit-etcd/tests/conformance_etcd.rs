//! The conformance suite against real etcd from the testkit: a single node, and a
//! 3-node cluster reached through all three endpoints.

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

lockkit_conformance::suite!(etcd, UrlHarness<Single>, with { fifo_order });
lockkit_conformance::suite!(etcd_cluster, UrlHarness<Cluster>, with { fifo_order });
