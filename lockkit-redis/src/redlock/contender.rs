//! One Redlock acquire, as the wait engine drives it: waiters entries on every
//! subscribed master, the spec's random retry delay, and patience while a quorum
//! cannot be reached.

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use lockkit_core::driver::{
    Attempt, Backoff, Busy, Contender, Contention, Jitter, Patience, WaitPolicy,
};
use lockkit_core::{AcquireRequest, LockError, Result, Wait, async_trait};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::acquire::Outcome;
use super::driver::RedlockDriver;
use super::fan_out::gather;
use super::master;
use crate::keys::Names;
use crate::scripts::ttl_ms;
use crate::wait::{NOTIFY_FALLBACK, Waiter};

/// How long a [`lockkit_core::Wait::Forever`] acquire keeps retrying while a quorum
/// of masters cannot be reached, before it gives up with the quorum error.
const UNREACHABLE_PATIENCE: Duration = Duration::from_secs(10);

pub(super) struct Contending<'a> {
    driver: &'a RedlockDriver,
    req: &'a AcquireRequest,
    names: Names,
    /// Our entry on each master that can wake us.
    waiters: Vec<Option<Waiter>>,
    /// Our place in every master's queue of waiters ([`arrival_rank`]).
    rank: u64,
    /// A round was refused (or cut short): our entries may be in the waiters sets.
    queued: bool,
}

impl<'a> Contending<'a> {
    /// A waiting request registers on every subscribed master before its first
    /// attempt, so the attempt that finds the lock held also queues it there.
    pub(super) fn new(driver: &'a RedlockDriver, req: &'a AcquireRequest) -> Self {
        let inner = &driver.inner;
        let waiters = inner
            .masters
            .iter()
            .map(|m| match req.wait {
                Wait::NoWait => None,
                _ if inner.notify => m.waiter(),
                _ => None,
            })
            .collect();
        Self {
            driver,
            req,
            names: driver.names(&req.key),
            waiters,
            rank: arrival_rank(),
            queued: false,
        }
    }

    /// Retries after a random delay of half to one and a half `retry_ms` (so
    /// contenders that split the vote do not collide again); with too few masters
    /// answering, until the wait's deadline, or for 10 s of it without one.
    pub(super) fn contention(self) -> Contention<'a> {
        let retry = self.driver.inner.retry.max(Duration::from_millis(2));
        let spread = Backoff::new(retry, retry, Jitter::Spread);
        let policy = WaitPolicy::DEFAULT.with_poll(spread).with_transient(
            Patience::DEFAULT
                .with_longest_endless_run(UNREACHABLE_PATIENCE)
                .with_backoff(spread),
        );
        Contention::new(self).with_policy(policy)
    }

    /// A random retry delay, as the Redlock spec asks, never later than the
    /// holder's expiry. While a quorum of the masters can wake this waiter, it is
    /// only the fallback for a lost wake-up, and [`NOTIFY_FALLBACK`] long on
    /// average.
    fn retry_delay(&self, expiry: Option<Duration>) -> Duration {
        let inner = &self.driver.inner;
        let woken_by = inner
            .masters
            .iter()
            .zip(&self.waiters)
            .filter(|(m, w)| w.is_some() && m.wakes())
            .count();
        let mean = if woken_by >= inner.quorum {
            ttl_ms(NOTIFY_FALLBACK)
        } else {
            ttl_ms(inner.retry).max(2)
        };
        let delay = Duration::from_millis(fastrand::u64(mean / 2..=mean + mean / 2));
        expiry.map_or(delay, |e| delay.min(until_expiry(e)))
    }

    /// Resolves on a wake-up from any master.
    fn woken(&self) -> Option<lockkit_core::driver::Wake> {
        let notifies: Vec<Arc<Notify>> = self
            .waiters
            .iter()
            .flatten()
            .map(|w| w.notify.clone())
            .collect();
        if notifies.is_empty() {
            return None;
        }
        Some(Box::pin(async move {
            let notified = notifies.into_iter().map(|n| Box::pin(n.notified_owned()));
            futures_util::future::select_all(notified).await;
            Ok(())
        }))
    }
}

/// A waiter's rank in the masters' queues: the wall clock's microseconds when its
/// acquire began, sent to every master. It only has to be the same number on
/// every master, so that each wakes the same waiter at one release
/// (`wake_next.lua`) and the vote does not split; earlier acquires go first. It
/// is an order, never a deadline: a client whose clock is off only goes earlier
/// or later in line, and a grant's deadline still comes from the monotonic clock.
fn arrival_rank() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// The holder's expiry, plus up to 20 ms so waiters do not all retry at once.
fn until_expiry(expiry: Duration) -> Duration {
    expiry + Duration::from_millis(fastrand::u64(0..20))
}

#[async_trait]
impl Contender for Contending<'_> {
    async fn attempt(&mut self) -> Result<Attempt> {
        // One release wakes us on each master that had us first: this attempt
        // answers all the wake-ups received so far.
        for w in self.waiters.iter().flatten() {
            let _ = w.notify.notified().now_or_never();
        }
        let expiry = match self
            .driver
            .attempt(self.req, &self.names, &self.waiters, self.rank, self.queued)
            .await
        {
            Outcome::Granted(grant) => return Ok(Attempt::Granted(grant)),
            // Some masters may have queued us before the others failed.
            Outcome::Unreachable(e) => {
                self.queued = true;
                return Ok(Attempt::Transient(e));
            }
            Outcome::Busy(expiry) => {
                self.queued = true;
                expiry
            }
        };
        let now = Instant::now();
        Ok(Attempt::Busy(match self.woken() {
            Some(wake) => Busy::until(now + self.retry_delay(expiry)).with_wake(wake),
            // The poll pause is the spec's random delay; the expiry bounds it.
            None => match expiry {
                Some(e) => Busy::until(now + until_expiry(e)),
                None => Busy::poll(),
            },
        }))
    }

    /// Our entries leave every master's waiters set (passing on a wake-up we may
    /// have taken). Best effort: an entry left behind expires.
    async fn give_up(&mut self, _: &LockError) {
        if self.waiters.iter().all(Option::is_none) {
            return;
        }
        let inner = &self.driver.inner;
        let (s, wake) = (&inner.scripts, inner.wake_prefix.as_str());
        let (n, limit) = (&self.names, inner.request_timeout);
        gather(
            inner
                .masters
                .iter()
                .zip(&self.waiters)
                .filter_map(|(m, w)| {
                    let entry = w.as_ref()?.entry.as_str();
                    let call = master::leave(s, n, entry, wake);
                    Some((m, async move { m.call(|c| call.run::<i64>(c)).await }))
                }),
            limit,
            |_| false,
        )
        .await;
    }
}
