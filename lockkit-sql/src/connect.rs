//! Opening a database server's pool within the connect timeout, and statements
//! within the request timeout, with errors that keep their cause.

use std::future::Future;
use std::time::Duration;

use lockkit_core::LockError;
use lockkit_core::url::Timeouts;
use sqlx::pool::PoolOptions;
use sqlx::{ConnectOptions, Connection, Database, Pool};

/// Opens a pool of at most `size` connections to `server` (a name for messages:
/// "PostgreSQL"), waiting at most `timeouts.connect` for the first one, and for a
/// pooled connection afterwards.
///
/// sqlx retries a refused connection until its deadline and then says only "pool
/// timed out"; on that error this tries one direct connection to report the real
/// cause ("connection refused", a TLS or authentication failure, or silence).
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
    let pool = PoolOptions::<DB>::new()
        .max_connections(size)
        .acquire_timeout(timeouts.connect)
        .connect_with(options.clone())
        .await;
    let error = match pool {
        Ok(pool) => return Ok(pool),
        Err(sqlx::Error::PoolTimedOut) => {
            match tokio::time::timeout(timeouts.connect, options.connect()).await {
                Ok(Err(cause)) => cause,
                Ok(Ok(conn)) => {
                    // It answers now: the server was starting up. Use the pool.
                    let _ = conn.close().await;
                    return Box::pin(open_pool::<DB>(driver, server, options, size, timeouts))
                        .await;
                }
                Err(_) => {
                    return Err(LockError::Connection {
                        driver,
                        message: format!(
                            "cannot connect to {server}: no answer within {} \
                             (connect_timeout_ms); the port is open, but nothing \
                             answers like {server} there",
                            lockkit_core::human_duration(timeouts.connect)
                        ),
                        source: None,
                    });
                }
            }
        }
        Err(e) => e,
    };
    Err(LockError::Connection {
        driver,
        message: format!(
            "cannot connect to {server}: {}",
            lockkit_core::redact_url(&describe(&error))
        ),
        source: Some(Box::new(error)),
    })
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
