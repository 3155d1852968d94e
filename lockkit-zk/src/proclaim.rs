//! An election leader's new value: the data of the holder's own node, rewritten
//! in place (its czxid, the token, stays). Waiters watching the node see a data
//! change, look again, and keep waiting.

use lockkit_core::{LockError, LockKey, LockMode, OwnerId, Result};
use zookeeper_client::Error as ZkError;

use crate::driver::ZkDriver;
use crate::error::zk_error;

impl ZkDriver {
    /// Stores `text` as the data of `owner`'s exclusive node for `key`.
    pub(crate) async fn proclaim_text(
        &self,
        key: &LockKey,
        owner: &OwnerId,
        text: &str,
    ) -> Result<()> {
        let held = match self.holds.get(key, owner) {
            Some(h) if h.mode == LockMode::Exclusive => h,
            _ => return Err(LockError::lost(key, "this driver holds no such lock")),
        };
        let session = &held.session;
        match session
            .within(session.client.set_data(&held.path, text.as_bytes(), None))
            .await
        {
            Ok(_) => Ok(()),
            Err(ZkError::NoNode) => Err(LockError::lost(key, "its node is gone")),
            Err(e) => Err(zk_error("storing the leader's value", e)),
        }
    }
}
