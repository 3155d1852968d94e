//! One acquire on a single server or a Cluster, as the wait engine drives it: a
//! place in the key's queue, so that readers stay behind a writer and a release
//! can wake us; the holder's expiry as the latest retry; and patience with a
//! cluster changing shape.

use std::time::Duration;

use lockkit_core::driver::{
    Attempt, Backoff, Busy, Contender, Contention, Jitter, Patience, WaitPolicy,
};
use lockkit_core::{AcquireRequest, LockError, OwnerId, Result, Wait, async_trait};
use tokio::time::Instant;

use crate::acquire::{Outcome, member};
use crate::driver::RedisDriver;
use crate::error::{is_transient, redis_error};
use crate::keys::Names;
use crate::wait::{NOTIFY_FALLBACK, Waiter};

/// Polling (no wake-ups, or the subscriber is reconnecting): first and longest delay.
const POLL_FIRST: Duration = Duration::from_millis(2);
const POLL_MAX: Duration = Duration::from_millis(50);

/// How long a `try_lock` keeps retrying through transient errors (a dropped
/// connection, a late reply, a slot migrating, a failover) before it reports them.
const TRANSIENT_PATIENCE: Duration = Duration::from_millis(250);

/// Polls (no wake-ups, or the subscriber reconnecting) from 2 ms doubling to 50 ms;
/// a `try_lock` retries transient errors (a dropped connection, a late reply, a
/// slot migrating, a failover) for 250 ms, a waiting acquire for as long as it
/// waits.
const POLICY: WaitPolicy = WaitPolicy::DEFAULT
    .with_poll(Backoff::new(POLL_FIRST, POLL_MAX, Jitter::Spread))
    .with_transient(
        Patience::DEFAULT
            .with_no_wait(TRANSIENT_PATIENCE)
            .with_backoff(Backoff::new(POLL_FIRST, POLL_MAX, Jitter::None)),
    );

/// One acquire, as the wait engine drives it.
pub(crate) struct Contending<'a> {
    driver: &'a RedisDriver,
    req: &'a AcquireRequest,
    names: Names,
    /// Woken by a release that names it; `None` when polling.
    waiter: Option<Waiter>,
    /// Our member in the key's queue (`None` for a `try_lock`). A polling waiter
    /// queues too, under a driver id starting with `-`, which nobody publishes to.
    member: Option<String>,
    /// An attempt ran with `member`: it may be in the queue.
    queued: bool,
}

#[async_trait]
impl Contender for Contending<'_> {
    async fn attempt(&mut self) -> Result<Attempt> {
        let outcome = self
            .driver
            .attempt(self.req, &self.names, self.member.as_deref(), self.queued)
            .await;
        // Whatever came back, a lost reply included, the script may have queued us.
        self.queued = self.member.is_some();
        let retry_ms = match outcome {
            Ok(Outcome::Granted(g)) => {
                // The grant took our place out of the queue.
                self.member = None;
                return Ok(Attempt::Granted(g));
            }
            Ok(Outcome::Busy { retry_ms }) => retry_ms,
            Ok(Outcome::Refused(e)) => return Err(e),
            Err(e) if is_transient(&e) => return Ok(Attempt::Transient(redis_error(e))),
            Err(e) => return Err(redis_error(e)),
        };
        // Try again at the holder's expiry at the latest (nobody publishes when a
        // lease runs out), plus jitter so waiters do not all retry at once; with
        // wake-ups working, after NOTIFY_FALLBACK at the latest (a lost message:
        // invariant R6).
        let expiry = Duration::from_millis(u64::try_from(retry_ms.max(1)).unwrap_or(1));
        let notified = self.driver.subs.as_ref().is_some_and(|s| s.is_live());
        let wake = self.waiter.as_ref().filter(|_| notified);
        let bound = if wake.is_some() {
            expiry.min(NOTIFY_FALLBACK)
        } else {
            expiry
        };
        let spread = bound.min(if wake.is_some() {
            NOTIFY_FALLBACK
        } else {
            POLL_MAX
        });
        let jitter = Duration::from_micros(fastrand::u64(0..=spread.as_micros() as u64 / 4));
        let busy = Busy::until(Instant::now() + bound + jitter);
        Ok(Attempt::Busy(match wake {
            Some(w) => {
                let notify = w.notify.clone();
                busy.with_wake(Box::pin(async move {
                    notify.notified_owned().await;
                    Ok(())
                }))
            }
            None => busy,
        }))
    }

    /// Drops our place, passing on a wake-up it may have taken.
    async fn give_up(&mut self, _: &LockError) {
        let member = self.member.take();
        self.driver.leave(&self.names, member.as_deref()).await;
    }
}

impl Drop for Contending<'_> {
    /// An acquire dropped while it waited (its future cancelled by a `select!` or a
    /// timeout of the caller's) leaves the queue in the background, so that readers
    /// behind it are not held up until its entry expires.
    fn drop(&mut self) {
        let Some(member) = self.member.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (driver, names) = (self.driver.clone(), self.names.clone());
        runtime.spawn(async move { driver.leave(&names, Some(&member)).await });
    }
}

impl<'a> Contending<'a> {
    /// A waiting request registers before its first attempt, so the attempt that
    /// finds the lock held also queues it, and a release right after wakes it.
    pub(crate) fn new(driver: &'a RedisDriver, req: &'a AcquireRequest) -> Self {
        let waiter = match (req.wait, &driver.subs) {
            (Wait::NoWait, _) | (_, None) => None,
            (_, Some(subs)) => Some(subs.waiter()),
        };
        let entry = match (&waiter, req.wait) {
            (Some(w), _) => Some(w.entry.clone()),
            (None, Wait::NoWait) => None,
            (None, _) => Some(format!("-{}:0", &OwnerId::new().to_hex()[..16])),
        };
        Self {
            driver,
            req,
            names: driver.names(&req.key),
            waiter,
            member: entry.map(|e| member(&e, req.mode)),
            queued: false,
        }
    }

    pub(crate) fn contention(self) -> Contention<'a> {
        Contention::new(self).with_policy(POLICY)
    }
}
