//! The conformance suite against SQLite: a lock file in a temp dir, shared by every
//! driver the harness hands out (each its own pool) and by the holder child process.

use std::sync::Arc;

mod suites;

use lockkit_conformance::{UrlHarness, url_backend};
use lockkit_core::{LockDriver, LockError};
use lockkit_sql::sqlite::{SqliteDriver, SqliteOptions};
use suites::QUEUED_LEASES;

async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
    Ok(Arc::new(
        SqliteDriver::connect(SqliteOptions::from_url(url)?).await?,
    ))
}

url_backend!(
    /// A lock file in a temp dir.
    File: tempfile::TempDir = async { tempfile::tempdir() },
    |s| format!("sqlite://{}", s.path().join("locks.db").display()),
    connect
);

lockkit_conformance::main! {
    sqlite: UrlHarness<File>, claims QUEUED_LEASES;
}
