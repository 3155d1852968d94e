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

/// Whether the database aborted the statement because it collided with another
/// transaction (a deadlock, a serialization failure): SQLSTATE class 40, on
/// PostgreSQL and MySQL alike. Nothing took effect; the attempt may simply be
/// made again.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn is_conflict(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|code| code.starts_with("40"))
}
