//! The conformance suite against a real MariaDB server from the testkit (one
//! throwaway server per test), in lease mode and in GET_LOCK mode.

#![allow(clippy::unwrap_used, clippy::panic)] // Tests fail by panicking.

use std::sync::Arc;

use lockkit_conformance::{UrlBackend, UrlHarness};
use lockkit_core::{LockDriver, LockError};
use lockkit_sql::mysql::MySqlOptions;
use lockkit_testkit::MariaDb;

async fn start(query: &str) -> (MariaDb, String) {
    let server = MariaDb::start().await.unwrap();
    let url = format!("{}{query}", server.url());
    (server, url)
}

async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
    lockkit_sql::mysql::connect(MySqlOptions::from_url(url)?).await
}

/// Lease mode (the default).
struct Lease;

#[lockkit_core::async_trait]
impl UrlBackend for Lease {
    type Server = MariaDb;
    async fn start() -> (MariaDb, String) {
        start("").await
    }
    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
        connect(url).await
    }
}

/// `?mode=get_lock`: session-bound `GET_LOCK` locks.
struct GetLock;

#[lockkit_core::async_trait]
impl UrlBackend for GetLock {
    type Server = MariaDb;
    async fn start() -> (MariaDb, String) {
        start("?mode=get_lock").await
    }
    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
        connect(url).await
    }
}

lockkit_conformance::suite!(mysql, UrlHarness<Lease>);

lockkit_conformance::suite!(
    mysql_get_lock,
    UrlHarness<GetLock>,
    skip {
        expired_lease_is_reacquirable: "GET_LOCK locks are session-bound: no TTL expiry",
        release_never_deletes_a_newer_holders_lock: "GET_LOCK locks are session-bound: a holder cannot be overtaken by expiry",
    }
);
