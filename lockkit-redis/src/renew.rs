//! Renewals on a single server or a Cluster: `renew_holds.lua` renews holds of
//! every mode, one call for one extend and one per batch of the watchdog's round,
//! split by hash slot on a cluster and sent together, so each node's connection
//! carries them as one pipeline.

use std::time::Duration;

use lockkit_core::{LockError, LockKey, OwnerId, Renewal, Result, renew_in_batches};
use tokio::time::Instant;

use crate::call::Call;
use crate::driver::{NAME, RedisDriver};
use crate::error::redis_error;
use crate::keys::names;
use crate::scripts::{MAX_BATCH, ttl_ms};

impl RedisDriver {
    /// Extends `owner`'s hold on `key`, of any mode, to `ttl` from now.
    pub(crate) async fn extend_one(
        &self,
        key: &LockKey,
        owner: &OwnerId,
        ttl: Duration,
    ) -> Result<Instant> {
        let sent = Instant::now();
        let one = [Renewal::new(key.clone(), owner.clone(), ttl)];
        if self.renew_slot(ttl, &one).await? == [true] {
            Ok(sent + ttl)
        } else {
            Err(LockError::lost(
                key,
                "the lock key is gone or belongs to another owner",
            ))
        }
    }

    /// The watchdog's round: every renewal in batches of at most [`MAX_BATCH`].
    pub(crate) async fn renew_all(&self, renewals: &[Renewal]) -> Vec<Result<Instant>> {
        renew_in_batches(NAME, renewals, MAX_BATCH, |ttl, batch| async move {
            #[cfg(feature = "cluster")]
            if self.conn.is_cluster() {
                return self.renew_by_slot(ttl, &batch).await;
            }
            self.renew_slot(ttl, &batch).await
        })
        .await
    }

    /// Renews a batch on a cluster. A script may only touch one slot (invariant
    /// R1): one call per slot, all sent at once, so each node's connection
    /// carries them as one pipeline.
    #[cfg(feature = "cluster")]
    async fn renew_by_slot(&self, ttl: Duration, batch: &[Renewal]) -> Result<Vec<bool>> {
        use std::collections::HashMap;

        use futures_util::future::join_all;
        use redis::cluster_routing::Slot;

        use crate::keys::lock_name;

        let mut by_slot: HashMap<Slot, Vec<usize>> = HashMap::new();
        for (i, r) in batch.iter().enumerate() {
            by_slot
                .entry(Slot::for_key(lock_name(&self.prefix, self.keys, &r.key)))
                .or_default()
                .push(i);
        }
        let groups: Vec<Vec<usize>> = by_slot.into_values().collect();
        let answers = join_all(groups.iter().map(|idx| {
            let part: Vec<Renewal> = idx.iter().map(|&i| batch[i].clone()).collect();
            async move { self.renew_slot(ttl, &part).await }
        }))
        .await;
        let mut renewed = vec![false; batch.len()];
        for (idx, answer) in groups.iter().zip(answers) {
            for (&i, ok) in idx.iter().zip(answer?) {
                renewed[i] = ok;
            }
        }
        Ok(renewed)
    }

    /// Renews holds of any mode that all live in one hash slot, with one call of
    /// `renew_holds.lua`.
    async fn renew_slot(&self, ttl: Duration, batch: &[Renewal]) -> Result<Vec<bool>> {
        let mut call = Call::new(&self.scripts.renew_holds, 3 * batch.len());
        for r in batch {
            let n = names(&self.prefix, self.keys, &r.key);
            call.key(n.lock()).key(n.holders()).key(n.holds());
        }
        call.arg(ttl_ms(ttl));
        for r in batch {
            call.arg(r.owner.to_hex());
        }
        let mut conn = self.conn.clone();
        let (flags, acked): (Vec<i64>, _) = call
            .invoke(&mut conn, self.replica_ack)
            .await
            .map_err(redis_error)?;
        if let (Some(ack), Some(acked)) = (self.replica_ack, acked) {
            ack.check(acked).map_err(redis_error)?;
        }
        Ok(flags.into_iter().map(|f| f == 1).collect())
    }
}
