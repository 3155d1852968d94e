//! The Redis floor: `SET NX PX`, then an EVALSHA compare-and-delete (two round trips).

use lockkit::LockError;

use super::{Hold, RawLock};

/// What the Redis floor sends.
pub(super) const DESCRIPTION: &str =
    "raw SET NX PX + EVALSHA compare-and-delete (two round trips), same server";

/// The compare-and-delete every hand-rolled Redis lock sends on release.
const REDIS_DEL_IF_OWNER: &str =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

/// A Redis floor client: a multiplexed connection of its own and the release script.
pub(crate) struct RedisFloor {
    conn: ::redis::aio::MultiplexedConnection,
    del: ::redis::Script,
}

impl RedisFloor {
    /// A client for a `redis://` URL (query options dropped).
    pub(super) async fn connect(url: &str) -> Result<Self, LockError> {
        let (url, _) = url.split_once('?').unwrap_or((url, ""));
        let conn = ::redis::Client::open(url)
            .map_err(|e| LockError::connection("redis", e))?
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| LockError::connection("redis", e))?;
        Ok(Self {
            conn,
            del: ::redis::Script::new(REDIS_DEL_IF_OWNER),
        })
    }
}

impl RawLock for RedisFloor {
    async fn clean_up(&self, keys: &[String]) {
        let mut conn = self.conn.clone();
        for key in keys {
            let _: Result<i64, _> = ::redis::cmd("DEL").arg(key).query_async(&mut conn).await;
        }
    }

    async fn try_acquire(&self, key: &str, owner: &str) -> Result<Option<Hold>, LockError> {
        let mut conn = self.conn.clone();
        let set: Option<String> = ::redis::cmd("SET")
            .arg(key)
            .arg(owner)
            .arg("NX")
            .arg("PX")
            .arg(30_000)
            .query_async(&mut conn)
            .await
            .map_err(|e| LockError::backend("redis", e))?;
        Ok(set.map(|_| Hold(owner.to_owned())))
    }

    async fn release(&self, key: &str, held: Hold) -> Result<(), LockError> {
        let Hold(owner) = held;
        let mut conn = self.conn.clone();
        let _: i64 = self
            .del
            .key(key)
            .arg(&owner)
            .invoke_async(&mut conn)
            .await
            .map_err(|e| LockError::backend("redis", e))?;
        Ok(())
    }
}
