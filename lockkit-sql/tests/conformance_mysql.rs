//! The conformance suite against a real MariaDB server from the testkit (the MySQL driver) (one
//! throwaway server per test).

#![allow(clippy::unwrap_used, clippy::panic)] // Tests fail by panicking.

use std::sync::Arc;

use lockkit_conformance::{Harness, TestHarness};
use lockkit_core::{LockDriver, LockError, LockKey};
use lockkit_sql::mysql::{MySqlDriver, MySqlOptions};
use lockkit_testkit::MariaDb;

struct MySqlHarness {
    server: MariaDb,
    admin: MySqlDriver,
}

async fn connect_url(url: &str) -> Result<MySqlDriver, LockError> {
    MySqlDriver::connect(MySqlOptions::from_url(url)?).await
}

#[lockkit_core::async_trait]
impl Harness for MySqlHarness {
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
impl TestHarness for MySqlHarness {
    async fn start() -> Self {
        let server = MariaDb::start().await.unwrap();
        let admin = connect_url(&server.url()).await.unwrap();
        Self { server, admin }
    }

    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
        Ok(Arc::new(connect_url(url).await?))
    }
}

lockkit_conformance::suite!(mysql, MySqlHarness);

/// `GET_LOCK` mode (`?mode=get_lock`): session-bound locks on the same server.
struct GetLockHarness {
    server: MariaDb,
    admin: Arc<dyn LockDriver>,
}

impl GetLockHarness {
    fn url(&self) -> String {
        format!("{}?mode=get_lock", self.server.url())
    }
}

async fn connect_any(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
    lockkit_sql::mysql::connect(MySqlOptions::from_url(url)?).await
}

#[lockkit_core::async_trait]
impl Harness for GetLockHarness {
    async fn driver(&self) -> Result<Arc<dyn LockDriver>, LockError> {
        connect_any(&self.url()).await
    }

    async fn vanish(&self, key: &LockKey) -> Result<(), LockError> {
        self.admin.force_release(key).await.map(|_| ())
    }

    fn holder_url(&self) -> Option<String> {
        Some(self.url())
    }
}

#[lockkit_core::async_trait]
impl TestHarness for GetLockHarness {
    async fn start() -> Self {
        let server = MariaDb::start().await.unwrap();
        let admin = connect_any(&format!("{}?mode=get_lock", server.url()))
            .await
            .unwrap();
        Self { server, admin }
    }

    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
        connect_any(url).await
    }
}

lockkit_conformance::suite!(
    mysql_get_lock,
    GetLockHarness,
    skip {
        expired_lease_is_reacquirable: "GET_LOCK locks are session-bound: no TTL expiry",
        release_never_deletes_a_newer_holders_lock: "GET_LOCK locks are session-bound: a holder cannot be overtaken by expiry",
    }
);
