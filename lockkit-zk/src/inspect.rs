//! Inspection: the key's queue, listed once, after our server has caught up with
//! the leader. Its leading holders hold (a writer, or a run of readers); each
//! holder node's czxid is its token and its data the owner's label; the rest of
//! the queue waits. Holds last as long as their session: no lease is shown.

use lockkit_core::driver::{Holder, Inspection};
use lockkit_core::{FencingToken, LockKey, Result};
use zookeeper_client::Error as ZkError;

use crate::driver::ZkDriver;
use crate::error::zk_error;
use crate::nodes::{holders, queue};
use crate::session::Session;

impl ZkDriver {
    pub(crate) async fn inspect_queue(&self, key: &LockKey) -> Result<Inspection> {
        let session = self.sessions.get().await?;
        session.caught_up(&self.dir(key)).await?;
        self.read_queue(&session, key).await
    }

    /// The key's queue as `session`'s server has it now: call it once that
    /// server has caught up with the leader.
    pub(crate) async fn read_queue(&self, session: &Session, key: &LockKey) -> Result<Inspection> {
        let dir = self.dir(key);
        let children = match session
            .answered(|| session.client.list_children(&dir))
            .await
            .reply
        {
            Ok(c) => c,
            Err(ZkError::NoNode) => return Ok(Inspection::free(key.clone()).with_waiters(0)),
            Err(e) => return Err(zk_error("listing the lock queue", e)),
        };
        let queue = queue(&children);
        let holding = holders(&queue);
        let mut shown = Vec::with_capacity(holding.len());
        for node in holding {
            let path = format!("{dir}/{}", node.name);
            match session
                .answered(|| session.client.get_data(&path))
                .await
                .reply
            {
                Ok((data, stat)) => {
                    let label = String::from_utf8(data).ok().filter(|l| !l.is_empty());
                    shown.push(
                        Holder::new(node.mode, FencingToken(stat.czxid as u64)).with_label(label),
                    );
                }
                // Released since the listing.
                Err(ZkError::NoNode) => {}
                Err(e) => return Err(zk_error("reading a lock node", e)),
            }
        }
        Ok(Inspection::free(key.clone())
            .with_holders(shown)
            .with_waiters(queue.len() - holding.len()))
    }
}
