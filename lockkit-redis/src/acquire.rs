//! The single-server and Cluster recipe for one acquire attempt: `acquire.lua`
//! (`acquire_permit.lua` for a semaphore's permit) takes the lock or, for a waiting
//! request, queues its waiters entry in the same round trip; `leave.lua` takes the
//! entry back when the waiter gives up.

use lockkit_core::driver::limit_mismatch;
use lockkit_core::{AcquireRequest, FencingToken, Grant, LockError, LockMode};
use tokio::time::Instant;

use crate::driver::RedisDriver;
use crate::keys::Names;
use crate::scripts::ttl_ms;
use crate::wait::{ENTRY_LIFETIME, Waiter};

/// What one attempt found.
pub(crate) enum Outcome {
    Granted(Grant),
    Busy {
        pttl_ms: i64,
    },
    /// The request cannot be granted as asked (a permit limit that differs from
    /// the holders').
    Refused(LockError),
}

impl RedisDriver {
    /// One run of `acquire.lua`: the grant, or the holder's remaining lease (with
    /// `waiter`, now queued in the lock's waiters set).
    pub(crate) async fn attempt(
        &self,
        req: &AcquireRequest,
        n: &Names,
        waiter: Option<&Waiter>,
    ) -> redis::RedisResult<Outcome> {
        let sent = Instant::now();
        let mut conn = self.conn.clone();
        let limit = match req.mode {
            LockMode::Permit { limit } => Some(limit),
            _ => None,
        };
        let mut invocation = match limit {
            Some(_) => self.scripts.acquire_permit.prepare_invoke(),
            None => self.scripts.acquire.prepare_invoke(),
        };
        invocation
            .key(&n.lock)
            .key(&n.fence)
            .key(&n.waiters)
            .arg(req.owner.to_hex())
            .arg(ttl_ms(req.ttl))
            .arg(waiter.map_or("", |w| w.entry.as_str()))
            .arg(ttl_ms(ENTRY_LIFETIME))
            .arg(self.fence_seed.script_arg())
            .arg(req.owner.label().unwrap_or(""));
        if let Some(limit) = limit {
            invocation.key(&n.permits).key(&n.permit_tokens).arg(limit);
        }
        let (held, value): (i64, i64) = invocation.invoke_async(&mut conn).await?;
        if held == -1 {
            let theirs = u32::try_from(value).unwrap_or(0);
            return Ok(Outcome::Refused(limit_mismatch(
                req,
                theirs,
                limit.unwrap_or(0),
            )));
        }
        if held == 1 {
            let token = FencingToken(u64::try_from(value).unwrap_or(0));
            return Ok(Outcome::Granted(Grant::of(req, token, sent + req.ttl)));
        }
        Ok(Outcome::Busy { pttl_ms: value })
    }

    /// A waiter gives up: drops its entry and passes on a wake-up it may have
    /// taken. Best effort: an entry left behind expires after [`ENTRY_LIFETIME`].
    pub(crate) async fn leave(&self, n: &Names, waiter: Option<&Waiter>) {
        let Some(waiter) = waiter else { return };
        let mut conn = self.conn.clone();
        let left: redis::RedisResult<i64> = self
            .scripts
            .leave
            .key(&n.lock)
            .key(&n.waiters)
            .arg(&waiter.entry)
            .arg(&*self.wake_prefix)
            .invoke_async(&mut conn)
            .await;
        if let Err(e) = left {
            tracing::debug!(error = %e, "could not remove a waiters entry; it will expire");
        }
    }
}
