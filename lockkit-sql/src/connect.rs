//! Opening a database server's pool within the connect timeout, and statements
//! within the request timeout, with errors that keep their cause.

use std::future::Future;
use std::time::Duration;

use crate::table::ServerSettings;
use lockkit_core::LockError;
use sqlx::pool::{PoolConnectionMetadata, PoolOptions};
use sqlx::{ConnectOptions, Connection, Database, Pool};

/// A pooled connection idle at least this long is pinged before it is handed out
/// (and replaced if the ping fails); one used more recently is not. sqlx pings
/// every connection it takes back, so a connection in steady use was tested a
/// moment ago; pinging it again before each statement would add a round trip to
/// every acquire and release.
pub(crate) const PING_IF_IDLE: Duration = Duration::from_secs(1);

/// Opens a pool of at most `size` connections to `server` (a name for messages:
/// "PostgreSQL"), waiting at most `timeouts.connect` for a pooled connection.
/// Connections idle for [`PING_IF_IDLE`] are pinged before use; `sessions` adds
/// to the pool's options (a statement run on each new connection).
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
    settings: &ServerSettings,
    options: <DB::Connection as Connection>::Options,
    sessions: impl FnOnce(PoolOptions<DB>) -> PoolOptions<DB>,
) -> Result<Pool<DB>, LockError> {
    let server = settings.kind.server;
    let timeouts = settings.timeouts;
    match tokio::time::timeout(timeouts.connect, options.connect()).await {
        Ok(Ok(first)) => {
            let _ = first.close().await;
        }
        Ok(Err(error)) => {
            let text = lockkit_core::url::redact_urls_in(&describe(&error));
            let hint = tls_hint(&text, settings);
            // A refusal for want of TLS also comes as SQLSTATE 28000: the hint
            // says what to change then.
            if let Some(refused) = refused_setting(&error).filter(|_| hint.is_empty()) {
                return Err(LockError::Config(format!(
                    "{server} refused the {refused} in the URL: {text}"
                )));
            }
            return Err(LockError::Connection {
                driver,
                message: format!("cannot connect to {server}: {text}{hint}"),
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
    let pool = PoolOptions::<DB>::new()
        .max_connections(settings.pool_size())
        .acquire_timeout(timeouts.connect)
        .test_before_acquire(false)
        .before_acquire(|conn, meta| Box::pin(ping_if_idle(conn, meta)));
    Ok(sessions(pool).connect_lazy_with(options))
}

/// The pool's check of a connection before it hands it out: a ping if it sat
/// idle for [`PING_IF_IDLE`]; `true` to hand it out.
pub(crate) async fn ping_if_idle<C: Connection>(
    conn: &mut C,
    meta: PoolConnectionMetadata,
) -> Result<bool, sqlx::Error> {
    if meta.idle_for >= PING_IF_IDLE {
        conn.ping().await?;
    }
    Ok(true)
}

/// What to change when a connect failed over TLS (or for want of it), in the
/// URL options of this database; empty when the error is not about TLS. Paths
/// are shown, never a key.
fn tls_hint(text: &str, settings: &ServerSettings) -> String {
    let n = settings.kind.tls;
    let given = &settings.tls;
    let lower = text.to_ascii_lowercase();
    let disabled = given
        .mode
        .as_deref()
        .is_some_and(|m| m.eq_ignore_ascii_case(n.disabled));
    let (mode, verify, ca) = (n.mode, n.verify, n.ca);
    if lower.contains("no encryption")
        || lower.contains("insecure transport")
        || (disabled && lower.contains("access denied"))
    {
        return format!(
            "; the server accepts TLS connections only: connect with {mode}={verify}&{ca}=CA.pem \
             (or {mode}={} to encrypt without verifying the server)",
            n.require
        );
    }
    if lower.contains("invalid peer certificate")
        || lower.contains("unknownissuer")
        || lower.contains("badsignature")
        || lower.contains("notvalidforname")
    {
        return match &given.ca {
            Some(path) => format!(
                "; the server's certificate does not verify against {ca}={path}: give the CA \
                 that signed it, and a host name the certificate names"
            ),
            None => format!(
                "; the server's certificate does not verify against the system's root \
                 certificates: give its CA with {ca}=PATH"
            ),
        };
    }
    if lower.contains("unknownca")
        || lower.contains("certificate required")
        || lower.contains("certificaterequired")
        || lower.contains("badcertificate")
    {
        return match &given.cert {
            Some(path) => format!(
                "; the server refused the client certificate {}={path}: it is not signed by \
                 a CA the server trusts",
                n.cert
            ),
            None => format!(
                "; the server requires a client certificate: give {}=PATH&{}=PATH",
                n.cert, n.key
            ),
        };
    }
    if lower.contains("does not support tls") || lower.contains("does not support ssl") {
        return format!(
            "; the server does not speak TLS: use {mode}={} (or enable TLS on the server)",
            n.disabled
        );
    }
    String::new()
}

/// A sqlx error in words, without sqlx's "error communicating with database:"
/// prefix on an I/O error (the cause is what helps).
/// What of the URL the server refused, when a connect failed for it: the
/// credentials (SQLSTATE class 28, as both servers report a wrong user or
/// password), or the database (PostgreSQL's 3D000, MySQL's 1049). A setting to
/// fix, so a [`LockError::Config`] as on every backend, not a `Connection`
/// error to retry.
fn refused_setting(e: &sqlx::Error) -> Option<&'static str> {
    let sqlx::Error::Database(db) = e else {
        return None;
    };
    let code = db.code().unwrap_or_default();
    if code.starts_with("28") {
        return Some("credentials");
    }
    let unknown_mysql_database = code == "42000" && db.message().starts_with("Unknown database");
    (code == "3D000" || unknown_mysql_database).then_some("database")
}

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
