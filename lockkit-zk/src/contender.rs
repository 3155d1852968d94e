//! One ZooKeeper acquire, as the wait engine drives it: our ephemeral sequential
//! node in the key's queue, a watch on the one node ahead of it, and patience with
//! a connection that drops (the session may survive it).

use std::time::Duration;

use lockkit_core::driver::{
    Attempt, Backoff, Busy, Contender, Contention, Jitter, Patience, WaitPolicy,
};
use lockkit_core::{AcquireRequest, LockError, Result, Wait, async_trait};
use tokio::time::Instant;

use crate::cleanup::delete_queued;
use crate::driver::ZkDriver;
use crate::error::zk_error;
use crate::late_reply::late_reply_patience;
use crate::nodes::{Ahead, blocker, queue};
use crate::queue::{Mine, Position};
use crate::session::Session;

pub(crate) struct Contending<'a> {
    driver: &'a ZkDriver,
    req: &'a AcquireRequest,
    dir: String,
    prefix: String,
    /// Our queue node, once made.
    mine: Option<Mine>,
    /// A create was sent and no reply came: the node may exist.
    unsure: bool,
}

impl<'a> Contending<'a> {
    pub(crate) fn new(driver: &'a ZkDriver, req: &'a AcquireRequest) -> Self {
        Self {
            driver,
            req,
            dir: driver.dir(&req.key),
            prefix: driver.options().recipe.node_prefix(req.mode, &req.owner),
            mine: None,
            unsure: false,
        }
    }

    /// A `try_lock` retries connection errors for
    /// [`late_reply_patience`] of the session timeout from its start
    /// (a reply late past the client's connection timeout, with the session
    /// alive, is not a failure); a waiting acquire retries them for twice the
    /// session timeout (at least 10 s) in a row. Pauses: 20 ms doubling to 1 s.
    pub(crate) fn contention(self) -> Contention<'a> {
        let policy = WaitPolicy::DEFAULT.with_transient(
            Patience::DEFAULT
                .with_no_wait(late_reply_patience(self.driver.options().session_timeout()))
                .with_longest_run(retry_budget(self.driver))
                .with_backoff(Backoff::new(
                    Duration::from_millis(20),
                    Duration::from_secs(1),
                    Jitter::None,
                )),
        );
        Contention::new(self).with_policy(policy)
    }

    /// Waits for `blocker` to go: a watch on it, or a change of the session's
    /// state; re-checked after a session timeout in case a watch was lost.
    async fn behind(&self, blocker: &str) -> Result<Attempt> {
        let Some(m) = &self.mine else {
            return Ok(Attempt::Busy(Busy::until(Instant::now())));
        };
        let session = &m.session;
        let (stat, watcher) = session
            .client
            .check_and_watch_stat(blocker)
            .await
            .map_err(|e| zk_error("watching the node ahead in the queue", e))?;
        // Gone already, or a permit that already passed the turn on (its data is
        // rewritten once, when it is granted after waiting) before our watch was
        // set: look again at once.
        if stat.is_none_or(|st| st.version > 0) {
            return Ok(Attempt::Busy(Busy::until(Instant::now())));
        }
        let key = self.req.key.clone();
        Ok(self.woken_by(session, async move {
            let event = watcher.changed().await;
            tracing::trace!(%key, ?event.event_type, "node ahead changed");
        }))
    }

    /// Busy until `changed` (a watch firing) or the session's state changes; looked
    /// at again after a session timeout in any case.
    fn woken_by(
        &self,
        session: &Session,
        changed: impl Future<Output = ()> + Send + 'static,
    ) -> Attempt {
        let mut states = session.client.state_watcher();
        let wake = async move {
            tokio::select! {
                () = changed => {}
                _ = states.changed() => {}
            }
            Ok(())
        };
        // A watch is not lost while the session lives (the client sets it again
        // after a reconnect); this re-check only bounds the damage if it were
        // (invariant Z5).
        let recheck = self
            .driver
            .options()
            .session_timeout()
            .max(Duration::from_secs(1));
        Attempt::Busy(Busy::woken_by(wake).or_at(Instant::now() + recheck))
    }
}

impl Contending<'_> {
    /// The first permit waiter: waits for the queue to change (a holder going, or
    /// a node joining), or for the session's state to. Looks again at once if the
    /// listing that set the watch already lets us in.
    async fn behind_holders(&self) -> Result<Attempt> {
        let Some(m) = &self.mine else {
            return Ok(Attempt::Busy(Busy::until(Instant::now())));
        };
        let session = &m.session;
        let (children, watcher) = session
            .client
            .list_and_watch_children(&self.dir)
            .await
            .map_err(|e| zk_error("watching the lock queue", e))?;
        let queue = queue(&children);
        let ours = queue.iter().position(|n| n.name == m.name);
        if ours.is_none_or(|i| blocker(&queue, i) != Ahead::AnyHolder) {
            return Ok(Attempt::Busy(Busy::until(Instant::now())));
        }
        Ok(self.woken_by(session, async move {
            watcher.changed().await;
        }))
    }
}

/// How long connection errors are retried in a row before an acquire gives up.
fn retry_budget(driver: &ZkDriver) -> Duration {
    (driver.options().session_timeout() * 2).max(Duration::from_secs(10))
}

#[async_trait]
impl Contender for Contending<'_> {
    async fn attempt(&mut self) -> Result<Attempt> {
        let step = self
            .driver
            .step(
                self.req,
                &self.dir,
                &self.prefix,
                &mut self.mine,
                &mut self.unsure,
            )
            .await;
        match step {
            Ok(Position::Granted(grant)) => Ok(Attempt::Granted(grant)),
            // Our node went away under us (its session ended, or someone deleted
            // it): queue again, if the wait allows.
            Ok(Position::Vanished) => {
                self.mine = None;
                Ok(Attempt::Busy(Busy::until(Instant::now())))
            }
            // A `try_lock` gives up (and deletes its node) without watching.
            Ok(Position::Behind(_)) if self.req.wait == Wait::NoWait => {
                Ok(Attempt::Busy(Busy::poll()))
            }
            Ok(Position::BehindHolders) if self.req.wait == Wait::NoWait => {
                Ok(Attempt::Busy(Busy::poll()))
            }
            Ok(Position::Behind(blocker)) => match self.behind(&blocker).await {
                Ok(attempt) => Ok(attempt),
                Err(e) => Attempt::failed(e),
            },
            Ok(Position::BehindHolders) => match self.behind_holders().await {
                Ok(attempt) => Ok(attempt),
                Err(e) => Attempt::failed(e),
            },
            Err(e) => Attempt::failed(e),
        }
    }

    async fn give_up(&mut self, _: &LockError) {
        if let Some(m) = self.mine.take() {
            delete_queued(m.session, m.path).await;
        } else if self.unsure {
            // The create may have landed: release by owner finds it.
            self.driver
                .delete_owned(&self.req.key, &self.req.owner)
                .await
                .ok();
        }
    }
}
