//! One Redlock acquire round: `acquire.lua` on every master at once, the quorum
//! and validity check, the fencing token written back to a quorum
//! (`raise_fence.lua`), and on failure the release on every master.

use std::time::Duration;

use lockkit_core::{AcquireRequest, FencingToken, Grant, LockError};
use tokio::time::Instant;

use super::driver::RedlockDriver;
use super::fan_out::gather;
use super::master::{self, Entry, Reply};
use super::quorum::{count, quorum_unreachable, unreachable_error};
use crate::keys::Names;
use crate::scripts::ttl_ms;
use crate::wait::{ENTRY_LIFETIME, Waiter};

/// What one round came to.
pub(super) enum Outcome {
    Granted(Grant),
    /// Held by another owner (or a split vote): the holder's lease left, if known.
    Busy(Option<Duration>),
    /// Too few masters answered.
    Unreachable(LockError),
}

impl RedlockDriver {
    /// One round; `waiters` (one per master, `None` where it cannot wake us) join
    /// the lock's waiters queue, at `rank`, on the masters that refuse; `queued`:
    /// an earlier round was refused, so they may be there already.
    pub(super) async fn attempt(
        &self,
        req: &AcquireRequest,
        n: &Names,
        waiters: &[Option<Waiter>],
        rank: u64,
        queued: bool,
    ) -> Outcome {
        let (q, s) = (self.inner.quorum, &self.inner.scripts);
        let seed = self.inner.fence_seed;
        let owner = req.owner.to_hex();
        let owner = owner.as_str();
        let (limit, ms) = (self.request_timeout(req.ttl), ttl_ms(req.ttl));
        let sent = Instant::now();
        let deadline = self.valid_until(sent, req.ttl);
        let replies = gather(
            self.inner.masters.iter().zip(waiters).map(|(m, w)| {
                let entry = w.as_ref().map(|w| Entry {
                    id: w.entry.as_str(),
                    lifetime_ms: ttl_ms(ENTRY_LIFETIME),
                    rank,
                    queued,
                });
                let call = master::acquire(s, n, owner, ms, seed, entry);
                (
                    m,
                    async move { m.call(|c| call.run::<(i64, i64)>(c)).await },
                )
            }),
            limit,
            |_| false,
        )
        .await;
        let granted = count(&replies, |v| v.0 == 1);
        let token = replies
            .iter()
            .filter_map(|r| match r {
                Reply::Answered((1, t)) => u64::try_from(*t).ok(),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        let mut unreachable =
            quorum_unreachable(&replies, q).then(|| unreachable_error(&replies, q));
        // Every master granted with the same token: each already holds owner:token
        // and a counter at the token, so the raise round would change nothing (any
        // later quorum meets them, and its INCR goes past the token: invariant RL2).
        let unanimous = replies
            .iter()
            .all(|r| matches!(r, Reply::Answered((1, t)) if u64::try_from(*t) == Ok(token)));
        if granted >= q && Instant::now() < deadline {
            let raised = if unanimous {
                None
            } else {
                let raise = master::raise_fence(s, n, owner, token);
                // Sent to every master, but awaited only from those that answered the
                // acquire round: a master that just timed out is not waited for twice.
                let awaited: Vec<bool> = replies
                    .iter()
                    .map(|r| matches!(r, Reply::Answered(_)))
                    .collect();
                Some(
                    gather(
                        self.inner
                            .masters
                            .iter()
                            .map(|m| (m, m.call(|c| raise.run::<i64>(c)))),
                        limit,
                        |r| {
                            r.iter()
                                .zip(&awaited)
                                .all(|(r, a)| !a || !matches!(r, Reply::Pending))
                        },
                    )
                    .await,
                )
            };
            let agreed = raised
                .as_ref()
                .is_none_or(|raised| count(raised, |v| *v == 1) >= q);
            if agreed && Instant::now() < deadline {
                let grant = Grant::of(req, FencingToken(token), deadline);
                return Outcome::Granted(grant);
            }
            if let Some(raised) = raised.filter(|r| quorum_unreachable(r, q)) {
                unreachable = Some(unreachable_error(&raised, q));
            }
        }
        // Not granted: undo whatever we took, on every master (including those that
        // said no or did not answer: their "no" may have been a lost "yes";
        // invariant RL1).
        self.release_everywhere(n, owner, limit).await;
        if let Some(e) = unreachable {
            return Outcome::Unreachable(e);
        }
        let expiry = replies
            .iter()
            .filter_map(|r| match r {
                Reply::Answered((0, pttl)) => Some(Duration::from_millis(
                    u64::try_from(*pttl).unwrap_or(1).max(1),
                )),
                _ => None,
            })
            .min();
        Outcome::Busy(expiry)
    }

    /// `release.lua` on every master: `owner`'s holds deleted wherever they are
    /// (a failed round's undo, and `release`).
    pub(super) async fn release_everywhere(
        &self,
        n: &Names,
        owner: &str,
        limit: Duration,
    ) -> Vec<Reply<i64>> {
        let (s, wake) = (&self.inner.scripts, self.inner.wake_prefix.as_str());
        let call = master::release(s, n, owner, wake);
        self.on_every_master(limit, |c| call.run::<i64>(c)).await
    }
}
