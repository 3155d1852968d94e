//! Deleting queue nodes: a release, a wait given up (retried in the background
//! while its outcome is unknown: a node left in a live session would block the
//! queue), a release by owner after a create whose reply was lost, and the
//! break-glass `force_release` and `purge`.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::driver::{Backoff, Jitter};
use lockkit_core::{LockKey, OwnerId, Result};
use zookeeper_client::Error as ZkError;

use crate::driver::ZkDriver;
use crate::error::{outcome_unknown, session_over, zk_error};
use crate::holds::Hold;
use crate::nodes::{QueueNode, holders, queue};
use crate::session::Session;

impl ZkDriver {
    /// Deletes a released hold's node. Returns whether it existed.
    ///
    /// A delete whose reply is late is sent again (the path is ours alone), and a
    /// node found gone after one went unanswered was deleted by it. If the outcome
    /// stays unknown, the delete goes on in the background and the release
    /// reports the connection error.
    pub(crate) async fn delete_held(&self, held: Hold) -> Result<bool> {
        let session = &held.session;
        let answer = session
            .answered(|| session.client.delete(&held.path, None))
            .await;
        match answer.reply {
            Ok(()) => Ok(true),
            Err(ZkError::NoNode) => Ok(answer.resent),
            Err(e) if session_over(&e) => Ok(false),
            Err(e) => {
                if outcome_unknown(&e) {
                    delete_in_background(session.clone(), held.path.clone());
                }
                Err(zk_error("deleting the lock node", e))
            }
        }
    }

    /// Deletes every node of `owner` under `key` (a release without a recorded
    /// hold: after a create whose reply was lost). Returns whether any existed.
    pub(crate) async fn delete_owned(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        self.delete_where(key, |queue| {
            queue
                .iter()
                .filter(|n| n.is_owned_by(owner))
                .cloned()
                .collect()
        })
        .await
    }

    /// Deletes the nodes that hold `key` now (`force_release`).
    pub(crate) async fn delete_holders(&self, key: &LockKey) -> Result<bool> {
        self.delete_where(key, |queue| holders(queue).to_vec())
            .await
    }

    /// Deletes every node of the key's queue, then the key's container node (the
    /// server would delete it once empty, but only at its next sweep).
    pub(crate) async fn delete_key(&self, key: &LockKey) -> Result<()> {
        self.delete_where(key, <[QueueNode]>::to_vec).await?;
        let session = self.sessions.get().await?;
        match session
            .within(session.client.delete(&self.dir(key), None))
            .await
        {
            // Someone queued again meanwhile: the server deletes it once empty.
            Ok(()) | Err(ZkError::NoNode) | Err(ZkError::NotEmpty) => Ok(()),
            Err(e) => Err(zk_error("deleting the lock's node", e)),
        }
    }

    /// Lists `key`'s queue and deletes the nodes `pick` chooses from it (in
    /// sequence order). Returns whether any of them existed.
    ///
    /// The listing follows a sync: in an ensemble, this session's server may be a
    /// follower that has not applied a grant made through another member yet, and
    /// a break that listed before it would report the key free and leave the hold.
    async fn delete_where(
        &self,
        key: &LockKey,
        pick: impl FnOnce(&[QueueNode]) -> Vec<QueueNode>,
    ) -> Result<bool> {
        let session = self.sessions.get().await?;
        let dir = self.dir(key);
        session.caught_up(&dir).await?;
        let children = match session
            .answered(|| session.client.list_children(&dir))
            .await
            .reply
        {
            Ok(c) => c,
            Err(ZkError::NoNode) => return Ok(false),
            Err(e) => return Err(zk_error("listing the lock queue", e)),
        };
        let mut any = false;
        for node in pick(&queue(&children)) {
            let path = format!("{dir}/{}", node.name);
            let answer = session
                .answered(|| session.client.delete(&path, None))
                .await;
            match answer.reply {
                Ok(()) => any = true,
                Err(ZkError::NoNode) => any |= answer.resent,
                Err(e) => return Err(zk_error("deleting a lock node", e)),
            }
        }
        Ok(any)
    }
}

/// Deletes a queue node we no longer want (a cancelled or timed-out wait). A node
/// left behind in a live session would block the queue, so a delete whose outcome
/// is unknown is retried in the background.
pub(crate) async fn delete_queued(session: Arc<Session>, path: String) {
    match session.within(session.client.delete(&path, None)).await {
        Ok(()) | Err(ZkError::NoNode) => {}
        Err(e) if session_over(&e) => {}
        Err(_) => delete_in_background(session, path),
    }
}

/// How long a background delete keeps trying at least. A session can outlive
/// twice its timeout while the ensemble elects a leader (the new leader gives every
/// session a fresh timeout), and its nodes with it.
const BACKGROUND_DELETE_PATIENCE: Duration = Duration::from_secs(60);

/// The pauses between a background delete's tries: 20 ms doubling to 1 s.
const BACKGROUND_PAUSES: Backoff = Backoff::new(
    Duration::from_millis(20),
    Duration::from_secs(1),
    Jitter::None,
);

/// Deletes `path` on a background task, retrying while the outcome is unknown and
/// the session lives (at most [`BACKGROUND_DELETE_PATIENCE`] or twice the session
/// timeout, whichever is longer).
pub(crate) fn delete_in_background(session: Arc<Session>, path: String) {
    tokio::spawn(async move {
        let patience = BACKGROUND_DELETE_PATIENCE.max(session.client.session_timeout() * 2);
        let answer = session
            .answered_within(patience, BACKGROUND_PAUSES, || {
                session.client.delete(&path, None)
            })
            .await;
        match answer.reply {
            Err(e) if !matches!(e, ZkError::NoNode) && !outcome_unknown(&e) => {
                tracing::warn!(%path, error = %e, "could not delete a lock node");
            }
            _ => {}
        }
    });
}
