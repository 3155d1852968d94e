//! The Redis floor: the raw fenced lock. One EVALSHA increments the key's
//! counter and sets the lock with the token in its value (`SET NX PX`), and one
//! EVALSHA compare-and-deletes it: the least a lock that hands out fencing
//! tokens sends (two round trips).

use lockkit::LockError;

use super::{Hold, RawLock};

/// What the Redis floor sends.
pub(super) const DESCRIPTION: &str = "raw fenced lock: EVALSHA (INCR the counter, SET NX PX with \
     the token in the value) + EVALSHA compare-and-delete (two round trips), same server";

/// The lease the floor's locks are set with.
const TTL_MS: u64 = 30_000;

/// The floor's scripts, one client's connection to one server.
pub(crate) struct RedisFloor {
    conn: ::redis::aio::MultiplexedConnection,
    acquire: ::redis::Script,
    release: ::redis::Script,
}

/// The counter of `key`'s tokens.
fn counter(key: &str) -> String {
    format!("{key}:fence")
}

impl RedisFloor {
    /// A client for a `redis://HOST:PORT` URL (query options dropped).
    pub(super) async fn connect_to(url: &str) -> Result<Self, LockError> {
        let (url, _) = url.split_once('?').unwrap_or((url, ""));
        let conn = ::redis::Client::open(url)
            .map_err(|e| LockError::connection("redis", e))?
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| LockError::connection("redis", e))?;
        Ok(Self {
            conn,
            acquire: ::redis::Script::new(include_str!("fenced_lock.lua")),
            release: ::redis::Script::new(include_str!("delete_if_value.lua")),
        })
    }

    /// One fenced attempt: the value set (`owner:token`), or `None` if held.
    pub(super) async fn take(&self, key: &str, owner: &str) -> Result<Option<String>, LockError> {
        let mut conn = self.conn.clone();
        let token: u64 = self
            .acquire
            .key(key)
            .key(counter(key))
            .arg(owner)
            .arg(TTL_MS)
            .invoke_async(&mut conn)
            .await
            .map_err(|e| LockError::backend("redis", e))?;
        Ok((token > 0).then(|| format!("{owner}:{token}")))
    }

    /// Deletes `key` if its value is still `value`.
    pub(super) async fn free(&self, key: &str, value: &str) -> Result<(), LockError> {
        let mut conn = self.conn.clone();
        let _: i64 = self
            .release
            .key(key)
            .arg(value)
            .invoke_async(&mut conn)
            .await
            .map_err(|e| LockError::backend("redis", e))?;
        Ok(())
    }

    /// Deletes the floor's keys and their counters.
    pub(super) async fn delete(&self, keys: &[String]) {
        let mut conn = self.conn.clone();
        for key in keys {
            let _: Result<i64, _> = ::redis::cmd("DEL")
                .arg(key)
                .arg(counter(key))
                .query_async(&mut conn)
                .await;
        }
    }
}

impl RawLock for RedisFloor {
    async fn clean_up(&self, keys: &[String]) {
        self.delete(keys).await;
    }

    async fn try_acquire(&self, key: &str, owner: &str) -> Result<Option<Hold>, LockError> {
        Ok(self.take(key, owner).await?.map(Hold))
    }

    async fn release(&self, key: &str, held: Hold) -> Result<(), LockError> {
        self.free(key, &held.0).await
    }
}
