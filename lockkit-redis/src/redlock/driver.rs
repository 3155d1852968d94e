//! [`RedlockDriver`]: the Redlock algorithm over N independent masters.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::{
    AcquireRequest, Capabilities, FencingToken, Grant, LockDriver, LockError, LockKey, OwnerId,
    Renewal, Result, WakeUp, async_trait, renew_in_batches,
};
use tokio::time::Instant;

use super::NAME;
use super::contender::Contending;
use super::master::{self, Entry, Master, Reply};
use super::options::RedlockOptions;
use super::quorum::{answered, count, gather, quorum_unreachable, unreachable_error};
use crate::keys::{Names, lock_name, names, wake_prefix};
use crate::options::{FenceSeed, WakeMode};
use crate::scripts::Scripts;
use crate::wait::Waiter;

/// Most locks renewed by one script call per master.
const MAX_BATCH: usize = 500;
/// With wake-ups from a quorum of masters, the mean time a waiter waits before
/// trying again anyway (a lost message), which also refreshes its waiters entries.
pub(super) const NOTIFY_FALLBACK: Duration = Duration::from_secs(1);
/// How long a waiters entry lives without a refresh: a waiter that died is skipped
/// by releases after this (longer than the longest fallback wait).
pub(super) const ENTRY_LIFETIME: Duration = Duration::from_secs(3);
/// The shortest per-master request timeout (loopback under load still answers).
const MIN_REQUEST_TIMEOUT: Duration = Duration::from_millis(50);
/// How long a [`lockkit_core::Wait::Forever`] acquire keeps retrying while a quorum
/// of masters cannot be reached, before it gives up with the quorum error.
pub(crate) const UNREACHABLE_PATIENCE: Duration = Duration::from_secs(10);

pub(super) fn ttl_ms(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX / 2)
}

/// Redlock: one lock over N independent Redis masters.
///
/// `redlock://[user:password@]h1:p1,h2:p2,…[/db][?prefix=NAME&drift_ms=N&retry_ms=N&timeout_ms=N]`,
/// or [`RedlockOptions::from_masters`] with one `redis://` URL per master. The keys
/// on each master are those of the single-instance driver (see the
/// [crate docs](crate)), and each step is the same Lua script, run on every master.
///
/// # The algorithm
///
/// - **Acquire.** Note `sent` on the monotonic clock, then run `acquire.lua` on all
///   masters at once, each request with its own timeout (a tenth of the TTL, at
///   least 50 ms, at most `request_timeout_ms`, default 250 ms), so a dead or paused
///   (SIGSTOP) master costs at most that. The lock is ours if at least `N/2 + 1`
///   masters said yes *and* the validity `ttl − elapsed − drift` is still positive,
///   where `drift = ttl·1 % + drift_ms` (default 2 ms). The grant's deadline is
///   `sent + ttl − drift`: never later than any master's own expiry. Every round
///   waits for all masters (each within its timeout), not just the first quorum:
///   a hold that reached only a bare quorum would be lost with the first of those
///   masters, while one on all healthy masters survives losing any minority. So a
///   paused or unreachable master costs an acquire one request timeout (a contended
///   or failed one two: the release round waits for every master too).
/// - **Failure.** Otherwise the release script runs on *every* master (also those
///   that said no or did not answer: a "no" may be a lost "yes"), and the attempt is
///   retried after a random delay (half to one and a half times `retry_ms`, default
///   100 ms, never later than the holder's expiry), within the wait deadline;
///   `try_lock` fails with `Contended` at once.
/// - **Too few masters answer.** When errors and timeouts leave fewer than a quorum
///   of answers, the error is [`lockkit_core::LockError::Connection`] with a message
///   such as `Redlock quorum unreachable: 2 of 5 masters answered, 3 needed`.
///   `try_lock` returns it at once; a waiting acquire keeps retrying (masters may
///   come back) and returns it instead of `Timeout` at its wait deadline; a
///   wait-forever acquire gives up with it after 10 s of unbroken unreachability.
///   Nothing hangs: every request has its timeout.
/// - **Extend** runs `extend.lua` on every master and succeeds if a quorum extended
///   within the validity; it reports `Lost` once so many masters no longer have the
///   hold that no quorum can, and a retryable connection error otherwise. The
///   watchdog renews all holds with one `extend_many.lua` call per master per round.
/// - **Release** runs `release.lua` on every master and reports whether any had our
///   hold. [`LockDriver::force_release`](lockkit_core::LockDriver::force_release)
///   deletes the key on every master.
/// - **Start-up** succeeds once a quorum of masters answers PING; the others are
///   retried on every request (a dead master does not fail `connect`).
///
/// # Fencing tokens
///
/// Each master keeps its own `INCR` counter, and those counters drift apart. The
/// token of a grant is the **maximum of the counters returned by the granting
/// quorum**, and before the grant is returned it is written back to every master by
/// `raise_fence.lua` — the counter is raised to at least the token, and our lock
/// value is rewritten as `<owner>:<token>` (TTL kept) — which must succeed on a
/// quorum, or the attempt counts as failed. That round is skipped when every master
/// granted with the same token: each already holds exactly what it would write. Why this is enough: any two quorums of
/// the same N masters intersect. The next holder's granting quorum therefore
/// contains a master whose counter is already ≥ this token, its `INCR` yields a
/// larger one, and the maximum is larger too. A repeated acquire by the holder finds
/// `<owner>:<token>` on at least one master of its quorum and returns the same
/// token.
///
/// # What Redlock cannot promise
///
/// The intersection argument needs every master to *remember*. A master that
/// restarts without persistence (anything short of `appendonly yes` +
/// `appendfsync always`) comes back with no locks and a counter at zero. Then two
/// quorums need not share a master that remembers: a second client can take a lock
/// that is still held (two holders at once), and its token can be *smaller* than
/// the current holder's (tokens go backwards; a protected resource that keeps the
/// highest token it saw then rejects the new holder's writes, which is the safe
/// failure). Losing masters for good is fine as long as a quorum of the original
/// ones keeps its data: tokens stay strictly increasing while masters die one after
/// another down to the quorum (the tests show it), and with fewer alive locking
/// stops with the error above.
///
/// What lockkit does about it: it cannot detect an amnesiac master, so it documents
/// the operator's part. Run the masters with `appendfsync always`, and keep a
/// restarted master out of service for at least the longest TTL in use (Redlock's
/// "delayed restart"), so that every lock it forgot has expired everywhere before it
/// votes again. Fencing protects only as long as a quorum of counters survives.
/// Separately, as for every lease, a holder paused past its deadline (GC, SIGSTOP)
/// is only stopped by the resource checking tokens.
///
/// A smaller caveat: a request that timed out on a slow master may still run there
/// later. A late acquire by the holder can leave a larger counter in its lock value
/// on that master, so a *repeated* acquire by the same owner after such a fault may
/// return a larger (never a smaller) token.
///
/// Fewer than three masters is pointless: with one it is the single-instance driver
/// with extra round trips; with two the quorum is both, so either one down stops all
/// locking.
#[derive(Clone)]
pub struct RedlockDriver {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub(super) masters: Vec<Master>,
    pub(super) quorum: usize,
    pub(super) scripts: Arc<Scripts>,
    prefix: String,
    drift: Duration,
    pub(super) retry: Duration,
    pub(super) request_timeout: Duration,
    fence_seed: FenceSeed,
    /// `<prefix>:wake:`, the wake channels' prefix on every master.
    pub(super) wake_prefix: String,
    /// Whether waiters are woken by releases (`wake=notify`) or only poll.
    pub(super) notify: bool,
}

impl std::fmt::Debug for RedlockDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedlockDriver")
            .field("masters", &self.inner.masters)
            .field("quorum", &self.inner.quorum)
            .field("prefix", &self.inner.prefix)
            .finish_non_exhaustive()
    }
}

pub(super) enum Outcome {
    Granted(Grant),
    /// Held by another owner (or a split vote): the holder's lease left, if known.
    Busy(Option<Duration>),
    /// Too few masters answered.
    Unreachable(LockError),
}

impl RedlockDriver {
    /// Sets up one connection per master and waits until a quorum answers PING.
    /// Masters that are down stay configured and are retried on every request.
    ///
    /// # Errors
    ///
    /// [`LockError::Connection`] naming how many masters answered when fewer than a
    /// quorum did within a few seconds.
    pub async fn connect(options: RedlockOptions) -> Result<Self> {
        let masters = options
            .masters
            .iter()
            .zip(options.shown.iter())
            .map(|(url, shown)| {
                Master::new(
                    url,
                    shown.clone(),
                    options.connect_timeout,
                    options.tls.as_ref(),
                )
            })
            .collect::<Result<Vec<_>>>()?;
        let quorum = masters.len() / 2 + 1;
        // Start-up waits for a quorum of masters to load the scripts (a connection,
        // with its one retry, and the requests); the others are primed in the
        // background.
        let scripts = Arc::new(Scripts::new());
        let limit = (options.connect_timeout + options.request_timeout) * 2;
        let replies = gather(
            masters
                .iter()
                .map(|m| m.timed(limit * 2, |c| master::prime(scripts.clone(), c))),
            |r| answered(r) >= quorum,
        )
        .await;
        // Masters still on their way get a little longer (a driver whose masters
        // are still connecting makes its first requests compete with that); after
        // that, the background.
        let replies: Vec<master::Reply<()>> =
            futures_util::future::join_all(masters.iter().zip(replies).map(|(m, reply)| {
                let scripts = scripts.clone();
                async move {
                    match reply {
                        master::Reply::Pending => {
                            m.timed(options.request_timeout, |c| master::prime(scripts, c))
                                .await
                        }
                        done => done,
                    }
                }
            }))
            .await;
        for (m, reply) in masters.iter().zip(&replies) {
            if !matches!(reply, master::Reply::Answered(_)) {
                m.prime_in_background(scripts.clone());
            }
        }
        if answered(&replies) < quorum {
            let failed = super::quorum::failures(&replies).join("; ");
            let hint = if options.tls.is_some()
                || options.masters.iter().any(|m| m.starts_with("rediss://"))
            {
                crate::tls::hint(&failed).to_string()
            } else {
                crate::tls::plain_hint(&failed, "redlocks")
            };
            return Err(LockError::Connection {
                driver: NAME,
                message: format!(
                    "cannot connect to Redlock: {} of {} masters answered, {quorum} needed ({failed}){hint}",
                    answered(&replies),
                    masters.len()
                ),
                source: None,
            });
        }
        let wake_prefix = wake_prefix(&options.prefix);
        let notify = options.wake == WakeMode::Notify;
        if notify {
            // The masters that answered are subscribed now (bounded); the rest,
            // and any that fails, in the background.
            let subscribed = futures_util::future::join_all(masters.iter().zip(&replies).map(
                |(m, reply)| async {
                    matches!(reply, master::Reply::Answered(_))
                        && m.subscribe(&wake_prefix, limit).await
                },
            ))
            .await;
            for (m, done) in masters.iter().zip(subscribed) {
                if !done {
                    m.subscribe_in_background(wake_prefix.clone());
                }
            }
        }
        Ok(Self {
            inner: Arc::new(Inner {
                masters,
                quorum,
                scripts,
                prefix: options.prefix,
                drift: options.drift,
                retry: options.retry,
                request_timeout: options.request_timeout,
                fence_seed: options.fence_seed,
                wake_prefix,
                notify,
            }),
        })
    }

    pub(super) fn names(&self, key: &LockKey) -> Names {
        names(&self.inner.prefix, key)
    }

    /// A tenth of the TTL, at least [`MIN_REQUEST_TIMEOUT`], at most the configured cap.
    fn request_timeout(&self, ttl: Duration) -> Duration {
        (ttl / 10)
            .max(MIN_REQUEST_TIMEOUT)
            .min(self.inner.request_timeout)
    }

    /// The clock-drift allowance for a lease of `ttl`: 1 % plus the fixed part.
    fn drift(&self, ttl: Duration) -> Duration {
        ttl / 100 + self.inner.drift
    }

    /// The lease's validity end for a request sent at `sent`.
    fn valid_until(&self, sent: Instant, ttl: Duration) -> Instant {
        sent + ttl.saturating_sub(self.drift(ttl))
    }

    async fn release_everywhere(&self, n: &Names, owner: &str, limit: Duration) -> Vec<Reply<i64>> {
        let (s, wake) = (&self.inner.scripts, self.inner.wake_prefix.as_str());
        gather(
            self.inner
                .masters
                .iter()
                .map(|m| m.timed(limit, |c| master::release(s, c, n, owner, wake))),
            |_| false,
        )
        .await
    }

    pub(super) async fn attempt(
        &self,
        req: &AcquireRequest,
        n: &Names,
        waiters: &[Option<Waiter>],
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
                });
                m.timed(limit, move |c| {
                    master::acquire(s, c, n, owner, ms, seed, entry)
                })
            }),
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
        // later quorum meets them, and its INCR goes past the token).
        let unanimous = replies
            .iter()
            .all(|r| matches!(r, Reply::Answered((1, t)) if u64::try_from(*t) == Ok(token)));
        if granted >= q && Instant::now() < deadline {
            let raised = if unanimous {
                None
            } else {
                // Sent to every master, but awaited only from those that answered the
                // acquire round: a master that just timed out is not waited for twice.
                let awaited: Vec<bool> = replies
                    .iter()
                    .map(|r| matches!(r, Reply::Answered(_)))
                    .collect();
                Some(
                    gather(
                        self.inner.masters.iter().map(|m| {
                            m.timed(limit, |c| master::raise_fence(s, c, n, owner, token))
                        }),
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
        // said no or did not answer: their "no" may have been a lost "yes").
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
}

#[async_trait]
impl LockDriver for RedlockDriver {
    fn name(&self) -> &'static str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::baseline().with_wake_up(if self.inner.notify {
            WakeUp::Notify
        } else {
            WakeUp::Poll
        })
    }

    async fn acquire(&self, req: &AcquireRequest) -> Result<Grant> {
        req.require_mode(NAME, self.capabilities())?;
        Contending::new(self, req).wait().await
    }

    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant> {
        let (q, s, n) = (self.inner.quorum, &self.inner.scripts, self.names(key));
        let owner = owner.to_hex();
        let (limit, ms) = (self.request_timeout(ttl), ttl_ms(ttl));
        let sent = Instant::now();
        let replies = gather(
            self.inner
                .masters
                .iter()
                .map(|m| m.timed(limit, |c| master::extend(s, c, &n, &owner, ms))),
            |_| false,
        )
        .await;
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

    async fn extend_many(&self, renewals: &[Renewal]) -> Vec<Result<Instant>> {
        let (q, s) = (self.inner.quorum, &self.inner.scripts);
        let results = renew_in_batches(NAME, renewals, MAX_BATCH, |ttl, batch| async move {
            let holds: Vec<(String, String)> = batch
                .iter()
                .map(|r| (lock_name(&self.inner.prefix, &r.key), r.owner.to_hex()))
                .collect();
            let (limit, ms) = (self.request_timeout(ttl), ttl_ms(ttl));
            let holds = &holds;
            // One script call per master for the whole batch.
            let replies = gather(
                self.inner
                    .masters
                    .iter()
                    .map(|m| m.timed(limit, |c| master::extend_many(s, c, holds, ms))),
                |_| false,
            )
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

    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        let n = self.names(key);
        let replies = self
            .release_everywhere(&n, &owner.to_hex(), self.inner.request_timeout)
            .await;
        if count(&replies, |v| *v == 1) > 0 {
            return Ok(true);
        }
        if quorum_unreachable(&replies, self.inner.quorum) {
            return Err(unreachable_error(&replies, self.inner.quorum));
        }
        Ok(false)
    }

    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        let (s, n) = (&self.inner.scripts, self.names(key));
        let wake = self.inner.wake_prefix.as_str();
        let limit = self.inner.request_timeout;
        let replies = gather(
            self.inner
                .masters
                .iter()
                .map(|m| m.timed(limit, |c| master::force_release(s, c, &n, wake))),
            |_| false,
        )
        .await;
        if quorum_unreachable(&replies, self.inner.quorum) {
            return Err(unreachable_error(&replies, self.inner.quorum));
        }
        Ok(count(&replies, |v| *v == 1) > 0)
    }

    /// Deletes the lock, its counter and its waiters on every master that answers;
    /// an error unless a quorum did.
    async fn purge(&self, key: &LockKey) -> Result<()> {
        let n = self.names(key);
        let limit = self.inner.request_timeout;
        let replies = gather(
            self.inner
                .masters
                .iter()
                .map(|m| m.timed(limit, |c| master::purge(c, &n))),
            |_| false,
        )
        .await;
        if quorum_unreachable(&replies, self.inner.quorum) {
            return Err(unreachable_error(&replies, self.inner.quorum));
        }
        Ok(())
    }
}
