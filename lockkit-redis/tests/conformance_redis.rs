//! The conformance suite against real Redis servers from the testkit: a single
//! instance (woken by pub/sub, and polling only), and a 3-master Redis Cluster.

#![allow(clippy::unwrap_used, clippy::panic)] // Tests fail by panicking.

use std::sync::Arc;

use lockkit_conformance::{UrlBackend, UrlHarness};
use lockkit_core::{LockDriver, LockError};
use lockkit_redis::{RedisDriver, RedisOptions};
use lockkit_testkit::{Redis, RedisCluster};

async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
    Ok(Arc::new(
        RedisDriver::connect(RedisOptions::from_url(url)?).await?,
    ))
}

struct Single;

#[lockkit_core::async_trait]
impl UrlBackend for Single {
    type Server = Redis;
    async fn start() -> (Redis, String) {
        let server = Redis::start().await.unwrap();
        let url = server.url();
        (server, url)
    }
    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
        connect(url).await
    }
}

/// The same server, with waiters polling instead of being woken.
struct SinglePolling;

#[lockkit_core::async_trait]
impl UrlBackend for SinglePolling {
    type Server = Redis;
    async fn start() -> (Redis, String) {
        let server = Redis::start().await.unwrap();
        let url = format!("{}?wake=poll", server.url());
        (server, url)
    }
    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
        connect(url).await
    }
}

/// Three masters, all slots assigned; the lock keys of one case spread over them.
struct Cluster;

#[lockkit_core::async_trait]
impl UrlBackend for Cluster {
    type Server = RedisCluster;
    async fn start() -> (RedisCluster, String) {
        let cluster = RedisCluster::start(3).await.unwrap();
        let url = cluster.url();
        (cluster, url)
    }
    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
        connect(url).await
    }
}

lockkit_conformance::suite!(redis, UrlHarness<Single>);
lockkit_conformance::suite!(redis_polling, UrlHarness<SinglePolling>);
lockkit_conformance::suite!(redis_cluster, UrlHarness<Cluster>);
