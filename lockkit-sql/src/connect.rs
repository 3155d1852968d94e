//! Opening a database server's pool within the connect timeout, and statements
//! within the request timeout, with errors that keep their cause.

use std::future::Future;
use std::time::Duration;

use lockkit_core::LockError;
use lockkit_core::url::Timeouts;
use sqlx::pool::PoolOptions;
use sqlx::{ConnectOptions, Connection, Database, Pool};

/// Opens a pool of at most `size` connections to `server` (a name for messages:
/// "PostgreSQL"), waiting at most `timeouts.connect` for a pooled connection.
///
/// One connection is made first, by itself, within the connect timeout: sqlx's
/// pool would retry a refused connection until its deadline and then say only
/// "pool timed out", where this reports the cause at once ("connection refused", a
/// TLS or authentication failure, or a server that does not answer).
///
/// # Errors
///
/// [`LockError::Connection`] saying why, with the password redacted.
pub(crate) async fn open_pool<DB: Database>(
    driver: &'static str,
    server: &str,
    options: <DB::Connection as Connection>::Options,
    size: u32,
    timeouts: Timeouts,
) -> Result<Pool<DB>, LockError> {
    match tokio::time::timeout(timeouts.connect, options.connect()).await {
        Ok(Ok(first)) => {
            let _ = first.close().await;
        }
        Ok(Err(error)) => {
            return Err(LockError::Connection {
                driver,
                message: format!(
                    "cannot connect to {server}: {}",
                    lockkit_core::redact_url(&describe(&error))
                ),
                source: Some(Box::new(error)),
            });
        }
        Err(_) => {
            return Err(LockError::Connection {
                driver,
                message: format!(
                    "cannot connect to {server}: no answer within {} (connect_timeout_ms); \
                     is {server} listening on that port?",
                    lockkit_core::human_duration(timeouts.connect)
                ),
                source: None,
            });
        }
    }
    Ok(PoolOptions::<DB>::new()
        .max_connections(size)
        .acquire_timeout(timeouts.connect)
        .connect_lazy_with(options))
}

/// A sqlx error in words, without sqlx's "error communicating with database:"
/// prefix on an I/O error (the cause is what helps).
fn describe(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Io(io) => io.to_string(),
        sqlx::Error::Tls(tls) => format!("TLS: {tls}"),
        other => other.to_string(),
    }
}

/// Bounds a statement by the request timeout: `.within(limit).await` fails it
/// with an I/O `TimedOut` error (a retryable [`LockError::Connection`] once
/// mapped) if it takes longer than `limit`. Its outcome is then unknown, as when a
/// connection drops mid-statement.
pub(crate) trait Within<T>: Future<Output = Result<T, sqlx::Error>> + Sized {
    /// This statement, bounded by `limit`.
    fn within(self, limit: Duration) -> impl Future<Output = Result<T, sqlx::Error>> {
        async move {
            match tokio::time::timeout(limit, self).await {
                Ok(result) => result,
                Err(_) => Err(sqlx::Error::Io(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!(
                        "no answer within {} (request_timeout_ms)",
                        lockkit_core::human_duration(limit)
                    ),
                ))),
            }
        }
    }
}

impl<T, F: Future<Output = Result<T, sqlx::Error>>> Within<T> for F {}
