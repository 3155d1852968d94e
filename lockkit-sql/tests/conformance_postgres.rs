//! The conformance suite against a real PostgreSQL server from the testkit (one
//! throwaway server per test).

#![allow(clippy::unwrap_used, clippy::panic)] // Tests fail by panicking.

use std::sync::Arc;

use lockkit_conformance::{Harness, TestHarness};
use lockkit_core::{LockDriver, LockError, LockKey};
use lockkit_sql::postgres::{PgDriver, PgOptions};
use lockkit_testkit::Postgres;

struct PgHarness {
    server: Postgres,
    admin: PgDriver,
}

async fn connect_url(url: &str) -> Result<PgDriver, LockError> {
    PgDriver::connect(PgOptions::from_url(url)?).await
}

#[lockkit_core::async_trait]
impl Harness for PgHarness {
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
impl TestHarness for PgHarness {
    async fn start() -> Self {
        let server = Postgres::start().await.unwrap();
        let admin = connect_url(&server.url()).await.unwrap();
        Self { server, admin }
    }

    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
        Ok(Arc::new(connect_url(url).await?))
    }
}

lockkit_conformance::suite!(postgres, PgHarness);

/// Advisory mode (`?mode=advisory`): session-bound locks on the same server.
struct PgAdvisoryHarness {
    server: Postgres,
    admin: Arc<dyn LockDriver>,
}

impl PgAdvisoryHarness {
    fn url(&self) -> String {
        format!("{}?mode=advisory", self.server.url())
    }
}

async fn connect_any(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
    lockkit_sql::postgres::connect(PgOptions::from_url(url)?).await
}

#[lockkit_core::async_trait]
impl Harness for PgAdvisoryHarness {
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
impl TestHarness for PgAdvisoryHarness {
    async fn start() -> Self {
        let server = Postgres::start().await.unwrap();
        let admin = connect_any(&format!("{}?mode=advisory", server.url()))
            .await
            .unwrap();
        Self { server, admin }
    }

    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
        connect_any(url).await
    }
}

lockkit_conformance::suite!(
    postgres_advisory,
    PgAdvisoryHarness,
    skip {
        expired_lease_is_reacquirable: "advisory locks are session-bound: no TTL expiry",
        release_never_deletes_a_newer_holders_lock: "advisory locks are session-bound: a holder cannot be overtaken by expiry",
    }
);
