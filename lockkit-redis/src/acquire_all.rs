//! Several free locks in one script call ([`lockkit_core::LockDriver::try_acquire_all`]):
//! `acquire_all.lua` takes every lock, each with its key's next token, or none.
//! On a single server (and behind Sentinel) with the counter's tokens; a Cluster
//! puts each lock in a slot of its own, and `fence_seed=clock` reads the clock
//! per grant, so there the locks are taken one by one.

use lockkit_core::{AcquireRequest, FencingToken, Grant, LockDriver, Result};
use tokio::time::Instant;

use crate::call::Call;
use crate::driver::RedisDriver;
use crate::error::redis_error;
use crate::options::FenceSeed;
use crate::scripts::ttl_ms;

impl RedisDriver {
    /// Whether this driver takes several locks in one call.
    pub(crate) fn takes_several_at_once(&self) -> bool {
        !self.is_cluster() && self.fence_seed == FenceSeed::Counter
    }

    /// Exclusive holds of every key of `reqs` (one owner, one TTL and label),
    /// or none if any key is held.
    pub(crate) async fn take_all(&self, reqs: &[AcquireRequest]) -> Result<Option<Vec<Grant>>> {
        let Some(first) = reqs.first() else {
            return Ok(Some(Vec::new()));
        };
        if !self.takes_several_at_once() {
            return Ok(None);
        }
        for req in reqs {
            self.keys.check(&req.key)?;
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
