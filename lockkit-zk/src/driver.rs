//! [`ZkDriver`]: the lock recipe over ephemeral sequential nodes.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use lockkit_core::driver::{Inspect, Inspection};
use lockkit_core::{
    AcquireRequest, Capabilities, FencingToken, Grant, LockDriver, LockError, LockKey, LockMode,
    LossSignal, OwnerId, Renewal, Result, WakeUp,
};
use tokio::time::{Instant, sleep};
use zookeeper_client::{CreateMode, Error as ZkError, EventType};

use crate::contender::Contending;
use crate::error::{DRIVER, outcome_unknown, session_over, zk_error};
use crate::holds::{Held, Holds};
use crate::nodes::{QueueNode, blocker, holders, key_dir, queue};
use crate::options::ZkOptions;
use crate::session::{Session, Sessions};

/// The ZooKeeper driver. See the [crate docs](crate) for the recipe and what it
/// guarantees.
#[derive(Debug)]
pub struct ZkDriver {
    pub(crate) sessions: Sessions,
    holds: Arc<Holds>,
}

/// Our queue node while an acquire runs.
pub(crate) struct Mine {
    pub(crate) session: Arc<Session>,
    pub(crate) name: String,
    pub(crate) path: String,
    /// The node's czxid, once known.
    czxid: Option<i64>,
}

/// What one look at the queue found.
pub(crate) enum Position {
    Granted(Grant),
    /// Wait for this node (full path) to go.
    Behind(String),
    /// Our node is gone (its session ended, or it was deleted): make another.
    Vanished,
}

impl ZkDriver {
    /// Connects (opens the first session and creates the root node).
    ///
    /// # Errors
    ///
    /// [`LockError::Connection`] when no server accepts a session,
    /// [`LockError::Config`] for refused credentials.
    pub async fn connect(options: ZkOptions) -> Result<Self> {
        let holds = Arc::new(Holds::default());
        let driver = Self {
            sessions: Sessions::new(options, Arc::downgrade(&holds)),
            holds,
        };
        driver.sessions.get().await?;
        Ok(driver)
    }

    /// The options this driver was connected with.
    pub fn options(&self) -> &ZkOptions {
        self.sessions.options()
    }

    /// Our hold on `key`, if it is live as far as this side knows: granted, not
    /// signalled lost, and its session connected.
    fn live_hold(&self, key: &LockKey, owner: &OwnerId) -> Result<Held> {
        let Some(held) = self.holds.get(key, owner) else {
            return Err(LockError::lost(key, "this driver holds no such lock"));
        };
        if let Some(why) = held.loss.reason() {
            return Err(LockError::lost(key, why));
        }
        if !held.session.is_connected() {
            return Err(LockError::lost(
                key,
                "the ZooKeeper session is not connected",
            ));
        }
        Ok(held)
    }

    pub(crate) fn dir(&self, key: &LockKey) -> String {
        key_dir(self.options().root(), key)
    }

    /// A request by an owner this driver already holds for: the same grant,
    /// refreshed (or `None` when there is no live hold to re-enter).
    fn reenter(&self, req: &AcquireRequest) -> Result<Option<Grant>> {
        let mode = req.mode;
        let Some(held) = self.holds.get(&req.key, &req.owner) else {
            return Ok(None);
        };
        if held.loss.is_fired() || held.session.is_over() {
            // A hold signalled lost is never handed out again; forget it and
            // queue afresh (its node, if it survived, is ours to remove).
            self.holds.remove(&req.key, &req.owner);
            delete_in_background(held.session.clone(), held.path.clone());
            return Ok(None);
        }
        if held.mode == LockMode::Shared && mode != LockMode::Shared {
            return Err(LockError::Unsupported {
                driver: DRIVER,
                capability: "upgrading a read hold to a write hold (release the read hold first)",
            });
        }
        Ok(Some(grant_of(req, &held)))
    }

    /// How long connection errors are retried in a row before an acquire gives up.
    pub(crate) fn retry_budget(&self) -> Duration {
        (self.options().session_timeout() * 2).max(Duration::from_secs(10))
    }

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
        let m = match mine {
            Some(m) => m,
            None => {
                let found = if *unsure {
                    self.find_owned(&session, dir, prefix).await?
                } else {
                    None
                };
                let m = match found {
                    Some(m) => m,
                    None => {
                        *unsure = true;
                        let label = req.owner.label().unwrap_or_default();
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
        if let Some(b) = blocker(&queue, index) {
            return Ok(Position::Behind(format!("{dir}/{}", b.name)));
        }
        let czxid = match m.czxid {
            Some(z) => z,
            None => match session.within(session.client.check_stat(&m.path)).await {
                Ok(Some(stat)) => stat.czxid,
                Ok(None) => return Ok(Position::Vanished),
                Err(e) => return Err(zk_error("reading the lock node", e)),
            },
        };
        let held = Held {
            path: m.path.clone(),
            token: FencingToken(czxid as u64),
            mode: req.mode,
            session: session.clone(),
            loss: LossSignal::new(),
        };
        self.holds
            .insert(req.key.clone(), req.owner.clone(), held.clone());
        if session.drops() != drops_before || !session.is_connected() {
            held.loss
                .fire("the connection to ZooKeeper dropped while the lock was being granted");
        }
        self.watch_own_node(&session, &m.path);
        *mine = None;
        Ok(Position::Granted(grant_of(req, &held)))
    }

    /// Creates our ephemeral sequential node, holding the owner's `label`, creating
    /// the key's container node first if it is missing.
    async fn create_node(
        &self,
        session: &Arc<Session>,
        dir: &str,
        prefix: &str,
        label: &[u8],
    ) -> Result<Mine> {
        let acls = self.sessions.acls();
        let node = CreateMode::EphemeralSequential.with_acls(acls);
        let container = CreateMode::Container.with_acls(acls);
        let path = format!("{dir}/{prefix}");
        // Twice at most: the container may be removed by the server between our
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
                    .within(session.client.create(dir, &[], &container))
                    .await
                {
                    Ok(_) | Err(ZkError::NodeExists) => continue,
                    Err(ZkError::NoNode) => {
                        // The root itself was removed by someone: put it back.
                        let root = CreateMode::Persistent.with_acls(self.sessions.acls());
                        session
                            .within(session.client.mkdir(self.options().root(), &root))
                            .await
                            .map_err(|e| zk_error("creating the lockkit root node", e))?;
                    }
                    Err(e) => return Err(zk_error("creating the lock's container node", e)),
                },
                Err(e) => return Err(zk_error("creating the queue node", e)),
            }
        }
        Err(LockError::Backend {
            driver: DRIVER,
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
    /// `force_release`, an operator's `delete`) signals the hold lost at once. The
    /// request is sent in the background: it costs the acquire no round trip.
    fn watch_own_node(&self, session: &Arc<Session>, path: &str) {
        let client = session.client.clone();
        let holds = Arc::downgrade(&self.holds);
        let path = path.to_string();
        tokio::spawn(async move {
            let why = "the lock node was deleted (force_release, or by hand)";
            match client.check_and_watch_stat(&path).await {
                Ok((Some(_), watcher)) => {
                    let event = watcher.changed().await;
                    if event.event_type == EventType::NodeDeleted
                        && let Some(holds) = holds.upgrade()
                    {
                        holds.fire_path(&path, why);
                    }
                }
                Ok((None, _)) => {
                    if let Some(holds) = holds.upgrade() {
                        holds.fire_path(&path, why);
                    }
                }
                // The session is in trouble; its state watcher signals that.
                Err(_) => {}
            }
        });
    }

    /// Deletes every node of `owner` under `key` (a release without a recorded
    /// hold: after a create whose reply was lost). Returns whether any existed.
    pub(crate) async fn delete_owned(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        let hex = owner.to_hex();
        self.delete_where(key, |queue| {
            queue
                .iter()
                .filter(|n| n.is_owned_by(&hex))
                .cloned()
                .collect()
        })
        .await
    }

    /// Lists `key`'s queue and deletes the nodes `pick` chooses from it (in
    /// sequence order). Returns whether any of them existed.
    async fn delete_where(
        &self,
        key: &LockKey,
        pick: impl FnOnce(&[QueueNode]) -> Vec<QueueNode>,
    ) -> Result<bool> {
        let session = self.sessions.get().await?;
        let dir = self.dir(key);
        let children = match session.within(session.client.list_children(&dir)).await {
            Ok(c) => c,
            Err(ZkError::NoNode) => return Ok(false),
            Err(e) => return Err(zk_error("listing the lock queue", e)),
        };
        let mut any = false;
        for node in pick(&queue(&children)) {
            let path = format!("{dir}/{}", node.name);
            match session.within(session.client.delete(&path, None)).await {
                Ok(()) => any = true,
                Err(ZkError::NoNode) => {}
                Err(e) => return Err(zk_error("deleting a lock node", e)),
            }
        }
        Ok(any)
    }
}

fn grant_of(req: &AcquireRequest, held: &Held) -> Grant {
    // The node lives as long as the session; the deadline is the client-side
    // lease that the watchdog keeps pushing out while the session is connected.
    Grant::of(req, held.token, Instant::now() + req.ttl).with_loss_signal(held.loss.clone())
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

/// Deletes `path` on a background task, retrying while the outcome is unknown and
/// the session lives (at most [`BACKGROUND_DELETE_PATIENCE`] or twice the session
/// timeout, whichever is longer).
fn delete_in_background(session: Arc<Session>, path: String) {
    tokio::spawn(async move {
        let patience = BACKGROUND_DELETE_PATIENCE.max(session.client.session_timeout() * 2);
        let give_up = Instant::now() + patience;
        let mut backoff = Duration::from_millis(20);
        while Instant::now() < give_up && !session.is_over() {
            match session.within(session.client.delete(&path, None)).await {
                Ok(()) | Err(ZkError::NoNode) => return,
                Err(e) if outcome_unknown(&e) => {}
                Err(e) => {
                    tracing::warn!(%path, error = %e, "could not delete a lock node");
                    return;
                }
            }
            sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(1));
        }
    });
}

#[async_trait]
impl LockDriver for ZkDriver {
    fn name(&self) -> &'static str {
        DRIVER
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::baseline()
            .with_shared(true)
            .with_inspect(Inspect::HoldersAndWaiters)
            .with_fair(true)
            .with_lease_expiry(false)
            .with_wake_up(WakeUp::Notify)
    }

    async fn acquire(&self, req: &AcquireRequest) -> Result<Grant> {
        req.require_mode(DRIVER, self.capabilities())?;
        if let Some(grant) = self.reenter(req)? {
            return Ok(grant);
        }
        Contending::new(self, req).wait().await
    }

    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant> {
        // An explicit extend answers "do I still hold it?" with the ensemble's
        // latest word: sync our server with the leader, then read our node. (The
        // watchdog's renewals, `extend_many`, check locally and cost nothing.)
        let sent_at = Instant::now();
        let held = self.live_hold(key, owner)?;
        let read = async {
            held.session
                .within(held.session.client.sync(&held.path))
                .await?;
            held.session
                .within(held.session.client.check_stat(&held.path))
                .await
        };
        match read.await {
            Ok(Some(stat)) if stat.czxid as u64 == held.token.get() => {}
            Ok(_) => {
                held.loss.fire("the lock node is gone");
                return Err(LockError::lost(key, "the lock node is gone"));
            }
            Err(e) if session_over(&e) => {
                held.loss.fire("the ZooKeeper session ended");
                return Err(LockError::lost(key, "the ZooKeeper session ended"));
            }
            Err(e) => return Err(zk_error("checking the lock node", e)),
        }
        self.live_hold(key, owner)?;
        Ok(sent_at + ttl)
    }

    async fn extend_many(&self, renewals: &[Renewal]) -> Vec<Result<Instant>> {
        // The session's heartbeat keeps every node alive: a renewal round is a
        // local check that the session is connected and no node was deleted.
        renewals
            .iter()
            .map(|r| {
                self.live_hold(&r.key, &r.owner)
                    .map(|_| Instant::now() + r.ttl)
            })
            .collect()
    }

    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        let Some(held) = self.holds.remove(key, owner) else {
            return self.delete_owned(key, owner).await;
        };
        match held
            .session
            .within(held.session.client.delete(&held.path, None))
            .await
        {
            Ok(()) => Ok(true),
            Err(ZkError::NoNode) => Ok(false),
            Err(e) if session_over(&e) => Ok(false),
            Err(e) => {
                if outcome_unknown(&e) {
                    delete_in_background(held.session.clone(), held.path.clone());
                }
                Err(zk_error("deleting the lock node", e))
            }
        }
    }

    async fn inspect(&self, key: &LockKey) -> Result<Inspection> {
        self.inspect_queue(key).await
    }

    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        self.delete_where(key, |queue| holders(queue).to_vec())
            .await
    }

    /// Deletes every node of the key's queue, then the key's container node (the
    /// server would delete it once empty, but only at its next sweep). Tokens are
    /// zxids: nothing else is left.
    async fn purge(&self, key: &LockKey) -> Result<()> {
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
}
