//! sqlx errors → lockkit errors.

use lockkit_core::LockError;

/// Maps a client error: transport trouble is `Connection`, the rest `Backend`.
pub(crate) fn db_error(driver: &'static str, e: sqlx::Error) -> LockError {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::Protocol(_) => LockError::connection(driver, e),
        other => LockError::backend(driver, other),
    }
}
