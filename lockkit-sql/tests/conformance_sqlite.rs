//! The conformance suite against SQLite: a lock file in a temp dir, shared by every
//! driver the harness hands out (each its own pool) and by the holder child process.

#![allow(clippy::unwrap_used, clippy::panic)] // Tests fail by panicking.

use std::sync::Arc;

use lockkit_conformance::{UrlBackend, UrlHarness};
use lockkit_core::{LockDriver, LockError};
use lockkit_sql::sqlite::{SqliteDriver, SqliteOptions};

struct File;

#[lockkit_core::async_trait]
impl UrlBackend for File {
    type Server = tempfile::TempDir;
    async fn start() -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("locks.db").display());
        (dir, url)
    }
    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
        Ok(Arc::new(
            SqliteDriver::connect(SqliteOptions::from_url(url)?).await?,
        ))
    }
}

lockkit_conformance::suite!(sqlite, UrlHarness<File>);
