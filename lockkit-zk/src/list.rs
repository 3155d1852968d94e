//! Listing held locks: the children of the root, one node per lock name (as
//! [`LockKey::to_segment`] writes it), whose names start with the prefix asked
//! for. A lock's node outlives its last hold until the server sweeps it, so each
//! one is inspected. A listing catches up with the leader once, not once per key:
//! every later read of the same session sees at least that state.

use lockkit_core::driver::Inspection;
use lockkit_core::{LockKey, Result};
use zookeeper_client::Error as ZkError;

use crate::driver::ZkDriver;
use crate::error::zk_error;
use crate::session::Session;

impl ZkDriver {
    /// The lock nodes whose names start with `prefix`, in order, at most `limit`.
    pub(crate) async fn list_keys(&self, prefix: &str, limit: usize) -> Result<Vec<LockKey>> {
        let session = self.sessions.get().await?;
        self.names(&session, prefix, limit).await
    }

    /// The held locks among [`Self::list_keys`], each inspected on the session
    /// that listed them.
    pub(crate) async fn list_held_queues(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<Inspection>> {
        let session = self.sessions.get().await?;
        let mut held = Vec::new();
        for key in self.names(&session, prefix, limit).await? {
            let seen = self.read_queue(&session, &key).await?;
            if seen.is_held() {
                held.push(seen);
            }
        }
        Ok(held)
    }

    /// The lock names under the root after `session` has caught up.
    async fn names(&self, session: &Session, prefix: &str, limit: usize) -> Result<Vec<LockKey>> {
        let root = self.options().root();
        session.caught_up(root).await?;
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
