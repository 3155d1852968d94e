//! Renewal: a hold lasts as long as its session, whose heartbeat keeps every node
//! alive. A watchdog round (`extend_many`) is a local check that the hold was not
//! signalled lost and its session is connected (invariant Z3); an explicit
//! `extend` asks the ensemble (a `sync`, then a read of our node: invariant Z4).

use std::time::Duration;

use lockkit_core::{LockError, LockKey, OwnerId, Renewal, Result};
use tokio::time::Instant;

use crate::driver::ZkDriver;
use crate::error::{session_over, zk_error};
use crate::holds::Hold;

impl ZkDriver {
    /// Our hold on `key`, if it is live as far as this side knows: granted, not
    /// signalled lost, and its session connected.
    fn live_hold(&self, key: &LockKey, owner: &OwnerId) -> Result<Hold> {
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

    /// An explicit extend: "do I still hold it?" answered with the ensemble's
    /// latest word: sync our server with the leader, then read our node.
    pub(crate) async fn confirm(
        &self,
        key: &LockKey,
        owner: &OwnerId,
        ttl: Duration,
    ) -> Result<Instant> {
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

    /// A watchdog round: costs no request.
    pub(crate) fn check_locally(&self, renewals: &[Renewal]) -> Vec<Result<Instant>> {
        renewals
            .iter()
            .map(|r| {
                self.live_hold(&r.key, &r.owner)
                    .map(|_| Instant::now() + r.ttl)
            })
            .collect()
    }
}
