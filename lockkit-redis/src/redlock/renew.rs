//! Redlock renewals: `extend.lua` on every master for one hold, and for the
//! watchdog one `extend_many.lua` call per master per batch; each succeeds where a
//! quorum extended within the validity.

use std::time::Duration;

use lockkit_core::{LockError, LockKey, OwnerId, Renewal, Result, renew_in_batches};
use tokio::time::Instant;

use super::NAME;
use super::driver::RedlockDriver;
use super::master;
use super::quorum::{count, unreachable_error};
use crate::keys::lock_name;
use crate::scripts::{MAX_BATCH, ttl_ms};

impl RedlockDriver {
    /// Extends one hold: `Lost` once so many masters no longer have it that no
    /// quorum can, a retryable connection error otherwise.
    pub(super) async fn extend_one(
        &self,
        key: &LockKey,
        owner: &OwnerId,
        ttl: Duration,
    ) -> Result<Instant> {
        let (q, s, n) = (self.inner.quorum, &self.inner.scripts, self.names(key));
        let owner = owner.to_hex();
        let (limit, ms) = (self.request_timeout(ttl), ttl_ms(ttl));
        let sent = Instant::now();
        let call = master::extend(s, &n, &owner, ms);
        let replies = self.on_every_master(limit, |c| call.run::<i64>(c)).await;
        let deadline = self.valid_until(sent, ttl);
        let (extended, gone) = (count(&replies, |v| *v == 1), count(&replies, |v| *v != 1));
        if extended >= q {
            if Instant::now() < deadline {
                return Ok(deadline);
            }
            return Err(LockError::lost(
                key,
                "a quorum extended the lease only after its validity ran out",
            ));
        }
        if gone > replies.len() - q {
            return Err(LockError::lost(
                key,
                format!(
                    "{gone} of {} masters no longer have this hold; {q} needed",
                    replies.len()
                ),
            ));
        }
        Err(unreachable_error(&replies, q))
    }

    /// The watchdog's round: every renewal, in batches of at most [`MAX_BATCH`],
    /// one script call per master per batch.
    pub(super) async fn renew_all(&self, renewals: &[Renewal]) -> Vec<Result<Instant>> {
        let (q, s) = (self.inner.quorum, &self.inner.scripts);
        let results = renew_in_batches(NAME, renewals, MAX_BATCH, |ttl, batch| async move {
            let holds: Vec<(String, String)> = batch
                .iter()
                .map(|r| {
                    (
                        lock_name(&self.inner.prefix, self.inner.keys, &r.key),
                        r.owner.to_hex(),
                    )
                })
                .collect();
            let (limit, ms) = (self.request_timeout(ttl), ttl_ms(ttl));
            let holds = &holds;
            // One script call per master for the whole batch.
            let call = master::extend_many(s, holds, ms);
            let replies = self
                .on_every_master(limit, |c| call.run::<Vec<i64>>(c))
                .await;
            let mut renewed = Vec::with_capacity(holds.len());
            for i in 0..holds.len() {
                let yes = count(&replies, |v| v.get(i) == Some(&1));
                let no = count(&replies, |v| v.get(i) != Some(&1));
                if yes < q && no <= replies.len() - q {
                    // Neither renewed nor surely gone: let the watchdog retry.
                    return Err(unreachable_error(&replies, q));
                }
                renewed.push(yes >= q);
            }
            Ok(renewed)
        })
        .await;
        // renew_in_batches counts from before the request; take off the drift.
        results
            .into_iter()
            .zip(renewals)
            .map(|(r, renewal)| {
                let deadline = r? - self.drift(renewal.ttl);
                if Instant::now() < deadline {
                    Ok(deadline)
                } else {
                    Err(LockError::lost(
                        &renewal.key,
                        "a quorum renewed the lease only after its validity ran out",
                    ))
                }
            })
            .collect()
    }
}
