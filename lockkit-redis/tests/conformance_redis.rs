//! The conformance suite against a real single-instance Redis from the testkit.

#![allow(clippy::unwrap_used, clippy::panic)] // Tests fail by panicking.

use std::sync::Arc;

use lockkit_conformance::{Harness, TestHarness};
use lockkit_core::{LockDriver, LockError, LockKey};
use lockkit_redis::{RedisDriver, RedisOptions};
use lockkit_testkit::Redis;

struct RedisHarness {
    server: Redis,
    admin: RedisDriver,
}

async fn connect_url(url: &str) -> Result<RedisDriver, LockError> {
    RedisDriver::connect(RedisOptions::from_url(url)?).await
}

#[lockkit_core::async_trait]
impl Harness for RedisHarness {
    async fn driver(&self) -> Result<Arc<dyn LockDriver>, LockError> {
        Ok(Arc::new(connect_url(&self.server.url()).await?))
    }

    async fn vanish(&self, key: &LockKey) -> Result<(), LockError> {
        self.admin.force_release(key).await.map(|_| ())
    }

    fn holder_url(&self) -> Option<String> {
        Some(self.server.url())
    }
}

#[lockkit_core::async_trait]
impl TestHarness for RedisHarness {
    async fn start() -> Self {
        let server = Redis::start().await.unwrap();
        let admin = connect_url(&server.url()).await.unwrap();
        Self { server, admin }
    }

    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
        Ok(Arc::new(connect_url(url).await?))
    }
}

lockkit_conformance::suite!(redis, RedisHarness);
