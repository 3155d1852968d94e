//! The acquire recipe on a key's queue: make sure our ephemeral sequential node
//! exists (finding it by owner after a create whose reply was lost), list the
//! queue, and either hold (recording the hold and watching its node) or name the
//! one node to wait for.

use std::sync::Arc;

use lockkit_core::driver::limit_mismatch;
use lockkit_core::{AcquireRequest, FencingToken, Grant, LockError, LockMode, Result};
use zookeeper_client::{CreateMode, Error as ZkError, EventType};

use crate::driver::NAME;
use crate::driver::ZkDriver;
use crate::error::zk_error;
use crate::holds::Hold;
use crate::nodes::{Ahead, QueueNode, blocker, queue};
use crate::session::Session;

/// Our queue node while an acquire runs.
pub(crate) struct Mine {
    pub(crate) session: Arc<Session>,
    pub(crate) name: String,
    pub(crate) path: String,
    /// The node's czxid, once known: the fencing token (invariant Z2).
    czxid: Option<i64>,
}

/// What one look at the queue found.
pub(crate) enum Position {
    Granted(Grant),
    /// Wait for this node (full path) to go.
    Behind(String),
    /// The first permit waiter: wait for any holder to go.
    BehindHolders,
    /// Our node is gone (its session ended, or it was deleted): make another.
    Vanished,
}

impl ZkDriver {
    /// Makes sure our node exists, then looks at the queue once.
    pub(crate) async fn step(
        &self,
        req: &AcquireRequest,
        dir: &str,
        prefix: &str,
        mine: &mut Option<Mine>,
        unsure: &mut bool,
    ) -> Result<Position> {
        let session = self.sessions.get().await?;
        if mine.as_ref().is_some_and(|m| m.session.id != session.id) {
            // The node died with its session.
            *mine = None;
            *unsure = false;
        }
        let drops_before = session.drops();
        // Whether we waited before this look (our node existed already).
        // Whether our node was queued before this look (a follower may watch it).
        let mut waited = mine.is_some();
        let m = match mine {
            Some(m) => m,
            None => {
                let found = if *unsure {
                    self.find_owned(&session, dir, prefix).await?
                } else {
                    None
                };
                waited |= found.is_some();
                let m = match found {
                    Some(m) => m,
                    None => {
                        *unsure = true;
                        let label = req.stored_label().unwrap_or_default();
                        self.create_node(&session, dir, prefix, label.as_bytes())
                            .await?
                    }
                };
                *unsure = false;
                mine.insert(m)
            }
        };
        let children = match session.within(session.client.list_children(dir)).await {
            Ok(c) => c,
            Err(ZkError::NoNode) => return Ok(Position::Vanished),
            Err(e) => return Err(zk_error("listing the lock queue", e)),
        };
        let queue = queue(&children);
        let Some(index) = queue.iter().position(|n| n.name == m.name) else {
            return Ok(Position::Vanished);
        };
        if let LockMode::Permit { limit } = req.mode
            && let Some(theirs) = queue[..index]
                .iter()
                .find_map(|n| n.mode.limit().filter(|l| *l != limit))
        {
            return Err(limit_mismatch(req, theirs, limit));
        }
        match blocker(&queue, index) {
            Ahead::Nothing => {}
            Ahead::Node(b) => return Ok(Position::Behind(format!("{dir}/{}", b.name))),
            Ahead::AnyHolder => return Ok(Position::BehindHolders),
        }
        let czxid = match m.czxid {
            Some(z) => z,
            None => match session.within(session.client.check_stat(&m.path)).await {
                Ok(Some(stat)) => stat.czxid,
                Ok(None) => return Ok(Position::Vanished),
                Err(e) => return Err(zk_error("reading the lock node", e)),
            },
        };
        let held = Hold {
            path: m.path.clone(),
            token: FencingToken(czxid as u64),
            mode: req.mode,
            session: session.clone(),
            loss: session.hold_loss(),
        };
        self.holds
            .insert(req.key.clone(), req.owner.clone(), held.clone());
        if session.drops() != drops_before || !session.is_connected() {
            held.loss
                .fire("the connection to ZooKeeper dropped while the lock was being granted");
        }
        self.watch_own_node(&session, &m.path);
        if waited && req.mode.limit().is_some() {
            pass_turn(&session, &m.path);
        }
        *mine = None;
        Ok(Position::Granted(held.grant(req)))
    }

    /// Creates our ephemeral sequential node, holding the owner's `label`, creating
    /// the key's node first if it is missing (a container, or as the recipe makes
    /// it: [`crate::recipe::Recipe::key_node_mode`]).
    async fn create_node(
        &self,
        session: &Arc<Session>,
        dir: &str,
        prefix: &str,
        label: &[u8],
    ) -> Result<Mine> {
        let acls = self.sessions.acls();
        let node = CreateMode::EphemeralSequential.with_acls(acls);
        let key_node = self.options().recipe.key_node_mode().with_acls(acls);
        let path = format!("{dir}/{prefix}");
        // Twice at most: a container may be removed by the server between our
        // creating it and our child's create.
        for _ in 0..3 {
            match session
                .within(session.client.create(&path, label, &node))
                .await
            {
                Ok((stat, seq)) => {
                    let name = format!("{prefix}{seq}");
                    return Ok(Mine {
                        session: session.clone(),
                        path: format!("{dir}/{name}"),
                        name,
                        czxid: Some(stat.czxid),
                    });
                }
                Err(ZkError::NoNode) => match session
                    .within(session.client.create(dir, &[], &key_node))
                    .await
                {
                    Ok(_) | Err(ZkError::NodeExists) => continue,
                    Err(ZkError::NoNode) => {
                        // Its parent is missing (lockkit's root removed by someone,
                        // or a foreign recipe's path never made): make it.
                        let parent = dir.rsplit_once('/').map_or("", |(p, _)| p);
                        let persistent = CreateMode::Persistent.with_acls(self.sessions.acls());
                        if !parent.is_empty() {
                            match session
                                .within(session.client.mkdir(parent, &persistent))
                                .await
                            {
                                Ok(()) | Err(ZkError::NodeExists) => {}
                                Err(e) => {
                                    return Err(zk_error("creating the lock's parent nodes", e));
                                }
                            }
                        }
                    }
                    Err(e) => return Err(zk_error("creating the lock's node", e)),
                },
                Err(e) => return Err(zk_error("creating the queue node", e)),
            }
        }
        Err(LockError::Backend {
            driver: NAME,
            message: format!("the container node {dir} kept disappearing; try again"),
            source: None,
        })
    }

    /// Our node in `dir`, made by an earlier create whose reply was lost.
    async fn find_owned(
        &self,
        session: &Arc<Session>,
        dir: &str,
        prefix: &str,
    ) -> Result<Option<Mine>> {
        let children = match session.within(session.client.list_children(dir)).await {
            Ok(c) => c,
            Err(ZkError::NoNode) => return Ok(None),
            Err(e) => return Err(zk_error("listing the lock queue", e)),
        };
        Ok(children
            .into_iter()
            .find(|c| c.starts_with(prefix) && QueueNode::parse(c).is_some())
            .map(|name| Mine {
                session: session.clone(),
                path: format!("{dir}/{name}"),
                name,
                czxid: None,
            }))
    }

    /// Sets a watch on our own node, so its deletion (a break-glass
    /// `force_release`, an operator's `delete`) signals the hold lost at once
    /// (invariant Z4). The
    /// request is sent in the background: it costs the acquire no round trip.
    fn watch_own_node(&self, session: &Arc<Session>, path: &str) {
        let client = session.client.clone();
        let holds = Arc::downgrade(&self.holds);
        let path = path.to_string();
        tokio::spawn(async move {
            loop {
                match client.check_and_watch_stat(&path).await {
                    Ok((Some(_), watcher)) => match watcher.changed().await.event_type {
                        // A permit passing the turn on rewrites its data: watch on.
                        EventType::NodeDataChanged => continue,
                        EventType::NodeDeleted => {}
                        // The session is in trouble; its state watcher signals that.
                        _ => return,
                    },
                    Ok((None, _)) => {}
                    Err(_) => return,
                }
                let why = deletion_cause(&client).await;
                if let Some(holds) = holds.upgrade() {
                    crate::holds::fire_path(&holds, &path, why);
                }
                return;
            }
        });
    }
}

/// Why our node was deleted. The server deletes a session's nodes when the
/// session expires, and may send that deletion to the session's own watch just
/// before it closes the connection: a process paused past its session timeout
/// reads the deletion first. So the session is asked one question (a `sync`)
/// before the loss is signalled: answered, the session lives, and someone
/// deleted the node; not answered, the session is over.
async fn deletion_cause(client: &zookeeper_client::Client) -> &'static str {
    let bound = client
        .session_timeout()
        .min(std::time::Duration::from_secs(1));
    match tokio::time::timeout(bound, client.sync("/")).await {
        Ok(Ok(())) => "the lock node was deleted (force_release, or by hand)",
        _ => {
            "the ZooKeeper session expired (this process was paused or cut off past \
             the session timeout), and the server deleted the lock node"
        }
    }
}

/// A permit granted after waiting touches its node (rewrites its data as it is):
/// the next permit waiter watches it, and now is the first waiter, which must watch
/// the holders instead. Sent in the background: it costs the grant no round trip.
fn pass_turn(session: &Arc<Session>, path: &str) {
    let (client, path) = (session.client.clone(), path.to_owned());
    tokio::spawn(async move {
        if let Ok((data, stat)) = client.get_data(&path).await {
            // Best effort: a waiter that misses it retries after a session timeout
            // (invariant Z5).
            let _ = client.set_data(&path, &data, Some(stat.version)).await;
        }
    });
}
