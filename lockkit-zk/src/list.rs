//! Listing held locks: the children of the root, one node per lock name (as
//! [`LockKey::to_segment`] writes it), whose names start with the prefix asked
//! for. A lock's node outlives its last hold until the server sweeps it, so the
//! client inspects each one.

use lockkit_core::{LockKey, Result};
use zookeeper_client::Error as ZkError;

use crate::driver::ZkDriver;
use crate::error::zk_error;

impl ZkDriver {
    /// The lock nodes whose names start with `prefix`, in order, at most `limit`.
    pub(crate) async fn list_keys(&self, prefix: &str, limit: usize) -> Result<Vec<LockKey>> {
        let session = self.sessions.get().await?;
        let root = self.options().root();
        crate::inspect::caught_up(&session, root).await?;
        let children = match session
            .answered(|| session.client.list_children(root))
            .await
            .reply
        {
            Ok(c) => c,
            Err(ZkError::NoNode) => return Ok(Vec::new()),
            Err(e) => return Err(zk_error("listing the locks", e)),
        };
        let mut keys: Vec<LockKey> = children
            .iter()
            .filter_map(|c| LockKey::from_segment(c))
            .filter(|k| k.as_str().starts_with(prefix))
            .collect();
        keys.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        keys.truncate(limit);
        Ok(keys)
    }
}
