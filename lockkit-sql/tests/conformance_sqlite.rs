//! The conformance suite against SQLite: a lock file in a temp dir, shared by every
//! driver the harness hands out (each its own pool) and by the holder child process.

use std::sync::Arc;

use lockkit_conformance::{UrlHarness, url_backend};
use lockkit_core::{LockDriver, LockError};
use lockkit_sql::sqlite::{SqliteDriver, SqliteOptions};

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

lockkit_conformance::suite!(
    sqlite,
    UrlHarness<File>,
    with {
        readers_share,
        writer_excludes_readers_and_writers,
        read_hold_is_not_upgraded,
        at_most_limit_permits_under_contention,
        permit_tokens_increase_across_permits,
        an_expired_permit_is_reacquirable,
        a_permit_limit_mismatch_is_a_config_error,
        a_release_wakes_one_waiter,
        a_cancelled_permit_acquire_leaves_nothing,
        a_killed_holders_permit_is_freed,
        inspection_shows_holder_mode_token_and_lease,
        a_free_key_inspects_empty,
    }
);
