//! Several free locks in one script call ([`lockkit_core::LockDriver::try_acquire_all`]):
//! `acquire_all.lua` takes every lock, each with its key's next token, or none.
//! On a single server (and behind Sentinel) with the counter's tokens. A Cluster
//! runs a script on one slot only: each lock's names share its key's hash tag,
//! so the locks of one call share a slot only when their keys share a tag of
//! their own (`{acct}:1`, `{acct}:2`); other sets, and every set under
//! `fence_seed=clock` (which reads the clock per grant), are taken one by one.

use lockkit_core::{AcquireRequest, FencingToken, Grant, LockDriver, Result};
use tokio::time::Instant;

use crate::call::Call;
use crate::driver::RedisDriver;
use crate::error::redis_error;
use crate::options::FenceSeed;
use crate::scripts::ttl_ms;

impl RedisDriver {
    /// Whether this driver takes any several free locks in one call (a
    /// Cluster: only those of one slot).
    pub(crate) fn takes_several_at_once(&self) -> bool {
        !self.is_cluster() && self.fence_seed == FenceSeed::Counter
    }

    /// Exclusive holds of every key of `reqs` (one owner, one TTL and label),
    /// or none if any key is held.
    pub(crate) async fn take_all(&self, reqs: &[AcquireRequest]) -> Result<Option<Vec<Grant>>> {
        let Some(first) = reqs.first() else {
            return Ok(Some(Vec::new()));
        };
        if self.fence_seed != FenceSeed::Counter {
            return Ok(None);
        }
        for req in reqs {
            self.keys.check(&req.key)?;
        }
        if self.is_cluster() && !one_slot(reqs.iter().map(|req| self.names(&req.key))) {
            return Ok(None);
        }
        let sent = Instant::now();
        let mut call = Call::new(&self.scripts.acquire_all, 2 * reqs.len());
        for req in reqs {
            let names = self.names(&req.key);
            call.key(names.lock()).key(names.fence());
        }
        call.arg(first.owner.to_hex())
            .arg(ttl_ms(first.ttl))
            .arg(first.stored_label().unwrap_or_default());
        let mut conn = self.conn.clone();
        let (tokens, acked): (Vec<i64>, _) = call
            .invoke(&mut conn, self.replica_ack)
            .await
            .map_err(redis_error)?;
        if tokens.len() != reqs.len() {
            return Ok(None);
        }
        if let (Some(ack), Some(acked)) = (self.replica_ack, acked)
            && let Err(e) = ack.check(acked)
        {
            // Too few replicas have them: give them back, and fail (invariant R5).
            for req in reqs {
                if let Err(release) = self.release(&req.key, &req.owner).await {
                    tracing::debug!(error = %release, "could not release an unacknowledged grant; it expires");
                }
            }
            return Err(redis_error(e));
        }
        let grants = reqs
            .iter()
            .zip(tokens)
            .map(|(req, token)| {
                let token = FencingToken(u64::try_from(token).unwrap_or(0));
                Grant::of(req, token, sent + req.ttl)
            })
            .collect();
        Ok(Some(grants))
    }
}

/// Whether the locks named `names` are all in one Cluster slot.
#[cfg(feature = "cluster")]
fn one_slot(mut names: impl Iterator<Item = crate::keys::Names>) -> bool {
    use redis::cluster_routing::Slot;
    let Some(first) = names.next() else {
        return true;
    };
    let slot = Slot::for_key(first.lock());
    names.all(|n| Slot::for_key(n.lock()) == slot)
}

/// Without the `cluster` feature there is no Cluster connection.
#[cfg(not(feature = "cluster"))]
fn one_slot(_: impl Iterator<Item = crate::keys::Names>) -> bool {
    true
}
