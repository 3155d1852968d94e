//! sqlx errors → lockkit errors.

use lockkit_core::LockError;

/// Maps a client error: transport trouble is `Connection`, and so is a server
/// that ends the session ([`ends_the_session`]); the rest is `Backend`.
pub(crate) fn db_error(driver: &'static str, e: sqlx::Error) -> LockError {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::Protocol(_) => LockError::connection(driver, e),
        e if ends_the_session(&e) => LockError::connection(driver, e),
        other => LockError::backend(driver, other),
    }
}

/// Whether the server answered with the end of the connection rather than with
/// a statement's failure: SQLSTATE class 08 (connection exception; MySQL's
/// "server shutdown in progress" is 08S01), or PostgreSQL's 57P01-57P03 (the
/// server shutting down, crashed or still starting: a restart or a managed
/// failover). The statement may not have run, or its effect is unknown, as
/// when the socket drops.
fn ends_the_session(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|code| code.starts_with("08") || matches!(&*code, "57P01" | "57P02" | "57P03"))
}

/// Whether an attempt's error may pass with the next one: the connection failed,
/// answered late or could not be had (the pool opens a new one, after a server
/// restart too). Not a closed pool: that is the driver shutting down.
pub(crate) fn is_transient(e: &LockError) -> bool {
    matches!(e, LockError::Connection { .. })
        && !sqlx_cause(e).is_some_and(|s| matches!(s, sqlx::Error::PoolClosed))
}

/// The client error a lockkit error was made from ([`db_error`]), if it was.
fn sqlx_cause(e: &LockError) -> Option<&sqlx::Error> {
    std::error::Error::source(e)?.downcast_ref()
}

/// Whether the database aborted the statement because it collided with another
/// transaction: a serialization failure (SQLSTATE 40001, which MySQL also gives
/// for a deadlock) or PostgreSQL's deadlock (40P01). Nothing took effect; the
/// attempt may simply be made again. (Not 40003, "statement completion
/// unknown": that one may have taken effect.)
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn is_conflict(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.code())
        .is_some_and(|code| matches!(&*code, "40001" | "40P01"))
}

/// Tries again after conflicts ([`is_conflict`]): a short pause spread at
/// random (1 ms doubling to 16 ms) before each, [`Self::TRIES`] tries in all.
/// What an autocommit statement under SERIALIZABLE (a serialization failure),
/// or a release whose transaction deadlocked with a renewal, needs. Each try
/// has a new snapshot, and the one before took no effect.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) struct ConflictRetries {
    left: u32,
    pauses: lockkit_core::driver::Pauses,
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
impl ConflictRetries {
    const TRIES: u32 = 20;

    pub(crate) fn new() -> Self {
        use lockkit_core::driver::{Backoff, Jitter};
        let pauses = Backoff::new(
            std::time::Duration::from_millis(1),
            std::time::Duration::from_millis(16),
            Jitter::Spread,
        );
        Self {
            left: Self::TRIES - 1,
            pauses: pauses.pauses(),
        }
    }

    /// After `e`: whether to try again (a conflict, and tries left), once the
    /// pause is over.
    pub(crate) async fn again(&mut self, e: &sqlx::Error) -> bool {
        if !is_conflict(e) || self.left == 0 {
            return false;
        }
        self.left -= 1;
        tokio::time::sleep(self.pauses.next_pause()).await;
        true
    }
}

/// Runs `attempt`, trying again after conflicts ([`ConflictRetries`]).
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) async fn retry_conflicts<T, F, Fut>(mut attempt: F) -> Result<T, sqlx::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, sqlx::Error>>,
{
    let mut retries = ConflictRetries::new();
    loop {
        match attempt().await {
            Err(e) if retries.again(&e).await => {}
            other => return other,
        }
    }
}

/// Whether `KILL QUERY` ended the statement (MySQL's error 1317, "query execution
/// was interrupted"; not the other SQLSTATE 70100 errors, such as a statement
/// timeout): the MySQL driver's wake-up of its waiter first in line.
#[cfg(feature = "mysql")]
pub(crate) fn is_interrupted(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .and_then(|d| d.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>())
        .is_some_and(|d| d.number() == 1317)
}

/// [`is_interrupted`], for an attempt's error.
#[cfg(feature = "mysql")]
pub(crate) fn was_interrupted(e: &LockError) -> bool {
    sqlx_cause(e).is_some_and(is_interrupted)
}
