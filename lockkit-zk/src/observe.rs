//! A change signal for election observers: a one-shot children watch on the
//! key's node, set by the listing that returns before the signal does, which
//! fires when a node joins or leaves the queue (a grant, a release, a waiter).
//! A new value (`setData` on a holder's node) does not fire it; the observer's
//! interval bounds that.

use lockkit_core::driver::ChangeSignal;
use lockkit_core::{LockKey, Result};
use zookeeper_client::Error as ZkError;

use crate::driver::ZkDriver;
use crate::error::zk_error;

impl ZkDriver {
    /// Arms a signal on the next change of the key's queue.
    pub(crate) async fn watch_queue(&self, key: &LockKey) -> Result<ChangeSignal> {
        let session = self.sessions.get().await?;
        let dir = self.dir(key);
        match session
            .within(session.client.list_and_watch_children(&dir))
            .await
        {
            Ok((_, watcher)) => Ok(Box::pin(async move {
                watcher.changed().await;
            })),
            // No queue yet: the key's node appears with its first contender,
            // which only the observer's interval notices.
            Err(ZkError::NoNode) => Ok(Box::pin(std::future::pending())),
            Err(e) => Err(zk_error("watching for a leader change", e)),
        }
    }
}
