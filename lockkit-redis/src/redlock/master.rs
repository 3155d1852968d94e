//! One master: its connection, a time limit on every request, and the script calls.
//!
//! The script calls are small free functions so that a change to a script's keys or
//! arguments is a change in one place.

use std::future::Future;
use std::time::Duration;

use lockkit_core::{LockError, Result, redact_url};
use redis::RedisResult;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use crate::keys::Names;
use crate::options::FenceSeed;
use crate::scripts::Scripts;

/// Redlock waiters never join a lock's `waiters` set, so a release has nobody to
/// wake and no wake channel to name.
const NO_WAKE_CHANNEL: &str = "";

/// One Redlock master.
pub(crate) struct Master {
    /// The master's URL without its password, for messages.
    pub(crate) shown: String,
    conn: ConnectionManager,
}

impl std::fmt::Debug for Master {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// What one master said to one request.
#[derive(Debug)]
pub(crate) enum Reply<T> {
    /// Not collected: the round ended before it arrived.
    Pending,
    /// The script ran and returned this.
    Answered(T),
    /// An error or no answer in time (with a message naming the master).
    Failed(String),
}

impl Master {
    /// A lazily connected master: nothing is sent until the first request, so a dead
    /// master does not fail the driver's start-up.
    pub(crate) fn new(url: &str, shown: String) -> Result<Self> {
        let client = crate::tls::client(url, None).map_err(|e| LockError::InvalidUrl {
            url: shown.clone(),
            reason: redact_url(&e.to_string()),
        })?;
        // Bounded and quick: a dead master must fail its request fast (one connect,
        // one retry a few ms later) and is tried again on the next request; the
        // quorum absorbs a master that is down.
        let config = ConnectionManagerConfig::new()
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(5))
            .set_max_delay(Duration::from_millis(20))
            .set_connection_timeout(Some(Duration::from_secs(1)))
            .set_response_timeout(Some(Duration::from_secs(5)));
        let conn = ConnectionManager::new_lazy_with_config(client, config).map_err(|e| {
            LockError::Connection {
                driver: super::NAME,
                message: format!(
                    "cannot set up master {shown}: {}",
                    redact_url(&e.to_string())
                ),
                source: Some(Box::new(e)),
            }
        })?;
        Ok(Self { shown, conn })
    }

    /// Runs `call` on this master's connection, giving up after `limit`.
    pub(crate) async fn timed<T, F, Fut>(&self, limit: Duration, call: F) -> Reply<T>
    where
        F: FnOnce(ConnectionManager) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        match tokio::time::timeout(limit, call(self.conn.clone())).await {
            Ok(Ok(v)) => Reply::Answered(v),
            Ok(Err(e)) => Reply::Failed(format!("{}: {}", self.shown, redact_url(&e.to_string()))),
            Err(_) => Reply::Failed(format!("{}: no answer within {limit:?}", self.shown)),
        }
    }
}

/// `PING`.
pub(crate) async fn ping(mut conn: ConnectionManager) -> RedisResult<()> {
    redis::cmd("PING")
        .query_async::<String>(&mut conn)
        .await
        .map(|_| ())
}

/// `acquire.lua`: `(1, token)` if now held by `owner`, `(0, pttl)` if by another.
pub(crate) async fn acquire(
    s: &Scripts,
    mut conn: ConnectionManager,
    n: &Names,
    owner: &str,
    ttl_ms: u64,
    seed: FenceSeed,
) -> RedisResult<(i64, i64)> {
    // Redlock waiters poll (with a random delay), so they never join `waiters`.
    s.acquire
        .key(&n.lock)
        .key(&n.fence)
        .key(&n.waiters)
        .arg(owner)
        .arg(ttl_ms)
        .arg("")
        .arg(0)
        .arg(seed.script_arg())
        .invoke_async(&mut conn)
        .await
}

/// `raise_fence.lua`: 1 if the lock is `owner`'s and now carries `token`.
pub(crate) async fn raise_fence(
    s: &Scripts,
    mut conn: ConnectionManager,
    n: &Names,
    owner: &str,
    token: u64,
) -> RedisResult<i64> {
    s.raise_fence
        .key(&n.lock)
        .key(&n.fence)
        .arg(owner)
        .arg(token)
        .invoke_async(&mut conn)
        .await
}

/// `extend.lua`: 1 if `owner`'s hold was extended.
pub(crate) async fn extend(
    s: &Scripts,
    mut conn: ConnectionManager,
    n: &Names,
    owner: &str,
    ttl_ms: u64,
) -> RedisResult<i64> {
    s.extend
        .key(&n.lock)
        .arg(owner)
        .arg(ttl_ms)
        .invoke_async(&mut conn)
        .await
}

/// `extend_many.lua`: one 1/0 per `(lock key, owner)`.
pub(crate) async fn extend_many(
    s: &Scripts,
    mut conn: ConnectionManager,
    holds: &[(String, String)],
    ttl_ms: u64,
) -> RedisResult<Vec<i64>> {
    let mut invocation = s.extend_many.prepare_invoke();
    invocation.arg(ttl_ms);
    for (lock, owner) in holds {
        invocation.key(lock);
        invocation.arg(owner);
    }
    invocation.invoke_async(&mut conn).await
}

/// `release.lua`: 1 if `owner`'s hold was deleted.
pub(crate) async fn release(
    s: &Scripts,
    mut conn: ConnectionManager,
    n: &Names,
    owner: &str,
) -> RedisResult<i64> {
    s.release
        .key(&n.lock)
        .key(&n.waiters)
        .arg(owner)
        .arg(NO_WAKE_CHANNEL)
        .invoke_async(&mut conn)
        .await
}

/// `force_release.lua`: 1 if there was a holder.
pub(crate) async fn force_release(
    s: &Scripts,
    mut conn: ConnectionManager,
    n: &Names,
) -> RedisResult<i64> {
    s.force_release
        .key(&n.lock)
        .key(&n.waiters)
        .arg(NO_WAKE_CHANNEL)
        .invoke_async(&mut conn)
        .await
}
