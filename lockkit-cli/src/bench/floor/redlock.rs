//! The Redlock floor: the Redis floor's fenced lock ([`super::redis`]) sent to
//! every master at once, granted when a majority set it (the token is then the
//! highest they gave), and its compare-and-delete sent to every master at once.
//! Two rounds of round trips in parallel: no validity check, no clock drift
//! allowance, and no token written back to a majority.

use futures_util::future::join_all;
use lockkit::LockError;

use super::redis::RedisFloor;
use super::{Hold, RawLock};

/// What the Redlock floor sends.
pub(super) const DESCRIPTION: &str = "raw fenced Redlock: the Redis floor's fenced lock on \
     every master at once, granted by a majority, + its compare-and-delete on every master at \
     once (two rounds of round trips in parallel), same servers";

/// One client of every master.
pub(crate) struct RedlockFloor {
    masters: Vec<RedisFloor>,
}

impl RedlockFloor {
    /// A client for a `redlock://HOST:PORT,HOST:PORT,…` URL (query options
    /// dropped; no TLS).
    pub(super) async fn connect(url: &str) -> Result<Self, LockError> {
        let hosts = url.strip_prefix("redlock://").unwrap_or(url);
        let (hosts, _) = hosts.split_once('?').unwrap_or((hosts, ""));
        let urls: Vec<String> = hosts.split(',').map(|h| format!("redis://{h}")).collect();
        let masters = join_all(urls.iter().map(|url| RedisFloor::connect_to(url))).await;
        Ok(Self {
            masters: masters.into_iter().collect::<Result<_, _>>()?,
        })
    }

    /// Deletes `key` on every master where `values` (one per master, empty
    /// where it was not set) says it was set.
    async fn free_all(&self, key: &str, values: &[String]) -> Result<(), LockError> {
        let set = self
            .masters
            .iter()
            .zip(values)
            .filter(|(_, v)| !v.is_empty());
        for freed in join_all(set.map(|(master, value)| master.free(key, value))).await {
            freed?;
        }
        Ok(())
    }
}

/// A hold's values, one per master, as [`Hold`] carries them: comma-separated
/// (an owner:token value has no comma).
fn values(hold: &Hold) -> Vec<String> {
    hold.0.split(',').map(str::to_owned).collect()
}

impl RawLock for RedlockFloor {
    async fn clean_up(&self, keys: &[String]) {
        join_all(self.masters.iter().map(|master| master.delete(keys))).await;
    }

    async fn try_acquire(&self, key: &str, owner: &str) -> Result<Option<Hold>, LockError> {
        let taken = join_all(self.masters.iter().map(|master| master.take(key, owner))).await;
        let set: Vec<String> = taken
            .into_iter()
            .map(|t| t.ok().flatten().unwrap_or_default())
            .collect();
        if set.iter().filter(|v| !v.is_empty()).count() > self.masters.len() / 2 {
            return Ok(Some(Hold(set.join(","))));
        }
        self.free_all(key, &set).await?;
        Ok(None)
    }

    async fn release(&self, key: &str, held: Hold) -> Result<(), LockError> {
        self.free_all(key, &values(&held)).await
    }
}
