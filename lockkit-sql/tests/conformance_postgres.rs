//! The conformance suite against a real PostgreSQL server from the testkit (one
//! throwaway server per test), in lease mode and in advisory mode.

#![allow(clippy::unwrap_used, clippy::panic)] // Tests fail by panicking.

use std::sync::Arc;

use lockkit_conformance::{UrlBackend, UrlHarness};
use lockkit_core::{LockDriver, LockError};
use lockkit_sql::postgres::PgOptions;
use lockkit_testkit::Postgres;

async fn start(query: &str) -> (Postgres, String) {
    let server = Postgres::start().await.unwrap();
    let url = format!("{}{query}", server.url());
    (server, url)
}

async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
    lockkit_sql::postgres::connect(PgOptions::from_url(url)?).await
}

/// Lease mode (the default).
struct Lease;

#[lockkit_core::async_trait]
impl UrlBackend for Lease {
    type Server = Postgres;
    async fn start() -> (Postgres, String) {
        start("").await
    }
    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
        connect(url).await
    }
}

/// `?mode=advisory`: session-bound advisory locks.
struct Advisory;

#[lockkit_core::async_trait]
impl UrlBackend for Advisory {
    type Server = Postgres;
    async fn start() -> (Postgres, String) {
        start("?mode=advisory").await
    }
    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
        connect(url).await
    }
}

lockkit_conformance::suite!(postgres, UrlHarness<Lease>);

lockkit_conformance::suite!(
    postgres_advisory,
    UrlHarness<Advisory>,
    skip {
        expired_lease_is_reacquirable: "advisory locks are session-bound: no TTL expiry",
        release_never_deletes_a_newer_holders_lock: "advisory locks are session-bound: a holder cannot be overtaken by expiry",
    }
);
