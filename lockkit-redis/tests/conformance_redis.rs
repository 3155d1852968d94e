//! The conformance suite against a real single-instance Redis from the testkit.

#![allow(clippy::unwrap_used, clippy::panic)] // Tests fail by panicking.

use std::sync::Arc;

use lockkit_conformance::{UrlBackend, UrlHarness};
use lockkit_core::{LockDriver, LockError};
use lockkit_redis::{RedisDriver, RedisOptions};
use lockkit_testkit::Redis;

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
        Ok(Arc::new(
            RedisDriver::connect(RedisOptions::from_url(url)?).await?,
        ))
    }
}

lockkit_conformance::suite!(redis, UrlHarness<Single>);
