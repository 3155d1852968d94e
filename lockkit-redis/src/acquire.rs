//! The single-server and Cluster recipe for one acquire attempt: one script per
//! mode (`acquire_exclusive.lua`, `acquire_shared.lua`, `acquire_permit.lua`)
//! takes the hold or, for a waiting request, queues its member in the same round
//! trip; `leave_queue.lua` takes the member back when the waiter gives up.

use lockkit_core::driver::{limit_mismatch, refuse_reentry};
use lockkit_core::{AcquireRequest, FencingToken, Grant, LockError, LockMode};
use tokio::time::Instant;

use crate::call::Call;
use crate::driver::{NAME, RedisDriver};
use crate::keys::Names;
use crate::scripts::ttl_ms;
use crate::wait::ENTRY_LIFETIME;

/// What one attempt found.
pub(crate) enum Outcome {
    Granted(Grant),
    Busy {
        /// The longest to wait before trying again, ms (at least 1).
        retry_ms: i64,
    },
    /// The request cannot be granted as asked: the owner holds the key in another
    /// mode, or a permit limit differs from the holders'.
    Refused(LockError),
}

/// A waiter's member in the key's queue: its entry and the mode it asks for (`X`,
/// `S` or `P<limit>`), so that a release knows whom it admits.
pub(crate) fn member(entry: &str, mode: LockMode) -> String {
    match mode {
        LockMode::Shared => format!("{entry}:S"),
        LockMode::Permit { limit } => format!("{entry}:P{limit}"),
        _ => format!("{entry}:X"),
    }
}

/// The mode a script's refusal code names: 0 exclusive, -1 shared, n a permit of n.
fn held_mode(code: i64) -> LockMode {
    match u32::try_from(code) {
        Ok(0) => LockMode::Exclusive,
        Ok(limit) => LockMode::Permit { limit },
        Err(_) => LockMode::Shared,
    }
}

impl RedisDriver {
    /// One run of the mode's acquire script: the grant, or how long to wait (with
    /// `member`, now queued). `queued`: an earlier attempt queued `member`, so the
    /// exclusive script's fast path must look for it.
    pub(crate) async fn attempt(
        &self,
        req: &AcquireRequest,
        n: &Names,
        member: Option<&str>,
        queued: bool,
    ) -> redis::RedisResult<Outcome> {
        let sent = Instant::now();
        let mut conn = self.conn.clone();
        let script = match req.mode {
            LockMode::Shared => &self.scripts.acquire_shared,
            LockMode::Permit { .. } => &self.scripts.acquire_permit,
            _ => &self.scripts.acquire_exclusive,
        };
        let mut call = Call::on_keys(script, &n.all());
        call.arg(req.owner.to_hex())
            .arg(ttl_ms(req.ttl))
            .arg(member.unwrap_or(""))
            .arg(ttl_ms(ENTRY_LIFETIME))
            .arg(self.fence_seed.script_arg())
            .arg(req.stored_label().unwrap_or_default());
        match req.mode {
            LockMode::Permit { limit } => call.arg(limit),
            LockMode::Shared => call.arg(""),
            _ => call.arg(if queued { "1" } else { "" }),
        };
        call.arg(if req.fair { "1" } else { "" });
        let ((status, value), acked): ((i64, i64), _) =
            call.invoke(&mut conn, self.replica_ack).await?;
        Ok(match status {
            1 => {
                if let (Some(ack), Some(acked)) = (self.replica_ack, acked)
                    && let Err(e) = ack.check(acked)
                {
                    // Too few replicas have it: give it back, and fail (a
                    // waiting acquire tries again; invariant R5).
                    let released = lockkit_core::LockDriver::release(self, &req.key, &req.owner);
                    if let Err(release) = released.await {
                        tracing::debug!(error = %release, "could not release an unacknowledged grant; it expires");
                    }
                    return Err(e);
                }
                let token = FencingToken(u64::try_from(value).unwrap_or(0));
                Outcome::Granted(Grant::of(req, token, sent + req.ttl))
            }
            0 => Outcome::Busy { retry_ms: value },
            -1 => Outcome::Refused(refuse_reentry(NAME, req, held_mode(value))),
            _ => {
                let theirs = u32::try_from(value).unwrap_or(0);
                let limit = req.mode.limit().unwrap_or(0);
                Outcome::Refused(limit_mismatch(req, theirs, limit))
            }
        })
    }

    /// A waiter gives up: drops its member and wakes whom its leaving admits.
    /// Best effort: a member left behind expires after [`ENTRY_LIFETIME`].
    pub(crate) async fn leave(&self, n: &Names, member: Option<&str>) {
        let Some(member) = member else { return };
        let mut conn = self.conn.clone();
        let mut invocation = self.scripts.leave_queue.prepare_invoke();
        for key in n.all() {
            invocation.key(key);
        }
        let left: redis::RedisResult<i64> = invocation
            .arg(member)
            .arg(&*self.wake_prefix)
            .arg(ttl_ms(ENTRY_LIFETIME))
            .arg(self.cluster_flag())
            .invoke_async(&mut conn)
            .await;
        if let Err(e) = left {
            tracing::debug!(error = %e, "could not remove a queue member; it will expire");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use lockkit_core::{LockKey, OwnerId, Wait};

    use super::*;

    fn req(mode: LockMode) -> AcquireRequest {
        AcquireRequest::new(
            LockKey::new("k").unwrap(),
            OwnerId::new(),
            Duration::from_secs(1),
            Wait::NoWait,
        )
        .with_mode(mode)
    }

    #[test]
    fn a_member_names_its_mode() {
        assert_eq!(member("d:1", LockMode::Exclusive), "d:1:X");
        assert_eq!(member("d:1", LockMode::Shared), "d:1:S");
        assert_eq!(member("d:1", LockMode::Permit { limit: 4 }), "d:1:P4");
    }

    #[test]
    fn an_upgrade_is_unsupported_and_other_families_are_config_errors() {
        let upgrade = refuse_reentry(NAME, &req(LockMode::Exclusive), held_mode(-1));
        assert!(
            matches!(upgrade, LockError::Unsupported { .. }),
            "{upgrade}"
        );
        let permit = refuse_reentry(NAME, &req(LockMode::Permit { limit: 2 }), held_mode(0));
        assert!(matches!(permit, LockError::Config(_)), "{permit}");
        let limit = refuse_reentry(NAME, &req(LockMode::Permit { limit: 2 }), held_mode(3));
        assert!(limit.to_string().contains("limit of 3"), "{limit}");
    }
}
