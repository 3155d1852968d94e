//! How a redis crate error becomes a [`LockError`]: at connect time said so a
//! person can act on it, later by whether retrying can help.

use lockkit_core::LockError;

use crate::driver::NAME;
use crate::eviction::refusal;
use crate::options::RedisOptions;
use crate::tls;

/// A failed request: a [`LockError::Connection`] if the connection is at fault
/// (retryable), else a [`LockError::Backend`].
pub(crate) fn redis_error(e: redis::RedisError) -> LockError {
    if let Some(why) = refusal(&e) {
        return LockError::Config(why);
    }
    if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() || e.is_timeout() {
        LockError::connection(NAME, e)
    } else {
        LockError::backend(NAME, e)
    }
}

/// Why connecting failed, said so a person can act on it: a server that does not
/// answer in time names the option to change; a refused password or database is a
/// configuration error (not "check that the server is running").
pub(crate) fn connect_error(e: redis::RedisError, options: &RedisOptions) -> LockError {
    use redis::ErrorKind;
    if let Some(why) = refusal(&e) {
        return LockError::Config(why);
    }
    let text = lockkit_core::url::redact_urls_in(&e.to_string());
    if e.is_timeout() || text.contains("timed out") {
        return LockError::Connection {
            driver: NAME,
            message: format!(
                "cannot connect to Redis: no answer within {} (connect_timeout_ms, \
                 request_timeout_ms); is Redis listening on that port?",
                lockkit_core::human_duration(options.timeouts.connect)
            ),
            source: Some(Box::new(e)),
        };
    }
    match e.kind() {
        ErrorKind::AuthenticationFailed => {
            return LockError::Config(format!("Redis refused the credentials in the URL: {text}"));
        }
        ErrorKind::Server(_) | ErrorKind::Extension if text.contains("DB index") => {
            return LockError::Config(format!(
                "Redis refused the database in the URL's path: {text}; a server has \
                 16 databases (0 to 15) unless its `databases` setting says otherwise"
            ));
        }
        ErrorKind::Server(_) | ErrorKind::Extension => {
            return LockError::Backend {
                driver: NAME,
                message: format!("Redis refused the connection: {text}"),
                source: Some(Box::new(e)),
            };
        }
        _ => {}
    }
    let hint = if options.nodes.iter().any(|n| n.starts_with("rediss://")) {
        tls::hint(&text).to_string()
    } else {
        tls::plain_hint(&text, "rediss")
    };
    LockError::Connection {
        driver: NAME,
        message: format!("cannot connect to Redis: {text}{hint}"),
        source: Some(Box::new(e)),
    }
}

/// Errors that may pass with the next attempt:
/// - a connection dropped, refused or answering late: the client reconnects,
///   and on a Cluster, once the other masters agree a node failed, its replica
///   takes over its slots;
/// - what a cluster answers while it changes shape: a slot migrating with only
///   some of a script's keys moved (TRYAGAIN), or a failover in progress (the
///   slot served by no one, a redirect the client could not yet follow within
///   its retries, or no connection to the slot's new master yet);
/// - a server that has just restarted and is still loading its dataset
///   (LOADING), which takes seconds for a large one.
///
/// An acquire sent again after a reply it never had is safe: the scripts grant
/// an owner that already holds the same hold and token again.
pub(crate) fn is_transient(e: &redis::RedisError) -> bool {
    use redis::{ErrorKind, ServerErrorKind};
    e.is_io_error()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_timeout()
        || matches!(
            e.kind(),
            ErrorKind::Server(
                ServerErrorKind::TryAgain
                    | ServerErrorKind::BusyLoading
                    | ServerErrorKind::ClusterDown
                    | ServerErrorKind::MasterDown
                    | ServerErrorKind::Moved
                    | ServerErrorKind::Ask
            ) | ErrorKind::ClusterConnectionNotFound
        )
}
