//! An election leader's new value: one run of `proclaim.lua` on the lock key,
//! which rewrites the holder's label text and keeps its token and lease.

use lockkit_core::{LockError, LockKey, OwnerId, Result};

use crate::driver::RedisDriver;
use crate::error::redis_error;

impl RedisDriver {
    /// Stores `text` on `owner`'s exclusive hold of `key`.
    pub(crate) async fn proclaim_text(
        &self,
        key: &LockKey,
        owner: &OwnerId,
        text: &str,
    ) -> Result<()> {
        let n = self.names(key);
        let mut conn = self.conn.clone();
        let stored: i64 = self
            .scripts
            .proclaim
            .key(n.lock())
            .arg(owner.to_hex())
            .arg(text)
            .invoke_async(&mut conn)
            .await
            .map_err(redis_error)?;
        if stored == 1 {
            Ok(())
        } else {
            Err(LockError::lost(key, "not held by this owner any more"))
        }
    }
}
