//! The conformance suite against SQLite: a lock file in a temp dir, shared by every
//! driver the harness hands out (each its own pool) and by the holder child process.

#![allow(clippy::unwrap_used, clippy::panic)] // Tests fail by panicking.

use std::sync::Arc;

use lockkit_conformance::{Harness, TestHarness};
use lockkit_core::{LockDriver, LockError, LockKey};
use lockkit_sql::sqlite::{SqliteDriver, SqliteOptions};

struct SqliteHarness {
    url: String,
    admin: SqliteDriver,
    _dir: tempfile::TempDir,
}

async fn connect_url(url: &str) -> Result<SqliteDriver, LockError> {
    SqliteDriver::connect(SqliteOptions::from_url(url)?).await
}

#[lockkit_core::async_trait]
impl Harness for SqliteHarness {
    async fn driver(&self) -> Result<Arc<dyn LockDriver>, LockError> {
        Ok(Arc::new(connect_url(&self.url).await?))
    }

    async fn vanish(&self, key: &LockKey) -> Result<(), LockError> {
        self.admin.force_release(key).await.map(|_| ())
    }

    fn holder_url(&self) -> Option<String> {
        Some(self.url.clone())
    }
}

#[lockkit_core::async_trait]
impl TestHarness for SqliteHarness {
    async fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("locks.db").display());
        let admin = connect_url(&url).await.unwrap();
        Self {
            url,
            admin,
            _dir: dir,
        }
    }

    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
        Ok(Arc::new(connect_url(url).await?))
    }
}

lockkit_conformance::suite!(sqlite, SqliteHarness);
