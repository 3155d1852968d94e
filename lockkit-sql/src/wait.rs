//! How a SQL driver contends: the one wait engine of `lockkit_core` makes
//! attempts that run the acquiring statement, woken by an in-process release or a
//! PostgreSQL NOTIFY, polling with jittered backoff when no wake-up comes. A
//! connection that fails under an attempt (a server restarting, a reply later
//! than `request_timeout_ms`) is transient: a waiting acquire tries again within
//! its wait, as on every other backend; a `try_lock` reports it. Attempting
//! again is safe: a lease statement grants an owner that holds the lease again,
//! with its token, and a session lock dies with the session that failed.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use lockkit_core::driver::{
    Attempt, Backoff, Busy, Contender, Contention, Grant, Jitter, WaitPolicy, async_trait,
};
use lockkit_core::{LockError, Result};
use tokio::sync::Notify;
use tokio::sync::futures::OwnedNotified;

use crate::error::is_transient;

/// The first pause between attempts.
const FIRST: Duration = Duration::from_millis(2);

/// Attempts that each run `attempt`, for the engine to make until one grants,
/// the wait runs out, or the caller cancels.
///
/// `wake` is armed *before* each attempt, so a release that lands between the
/// attempt and the wait is not missed. `poll_cap` bounds the pause when no wake-up
/// comes (a lost notification, another process without notifications).
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn polled<'a, F, Fut>(
    wake: Arc<Notify>,
    poll_cap: Duration,
    attempt: F,
) -> Contention<'a>
where
    F: FnMut() -> Fut + Send + 'a,
    Fut: Future<Output = Result<Option<Grant>>> + Send + 'a,
{
    polled_then(wake, policy(poll_cap), attempt, || async {})
}

/// As [`polled`], with the pauses of `policy`, running `give_up` when the wait
/// ends without a grant (to take back what the attempts left behind, such as a
/// queue row).
pub(crate) fn polled_then<'a, F, Fut, G, GFut>(
    wake: Arc<Notify>,
    policy: WaitPolicy,
    attempt: F,
    give_up: G,
) -> Contention<'a>
where
    F: FnMut() -> Fut + Send + 'a,
    Fut: Future<Output = Result<Option<Grant>>> + Send + 'a,
    G: FnMut() -> GFut + Send + 'a,
    GFut: Future<Output = ()> + Send + 'a,
{
    Contention::new(Statement {
        wake,
        attempt,
        give_up,
    })
    .with_policy(policy)
}

/// Pauses of 2 ms doubling to `poll_cap`, jittered, when no wake-up comes.
pub(crate) fn policy(poll_cap: Duration) -> WaitPolicy {
    WaitPolicy::DEFAULT.with_poll(Backoff::new(FIRST, poll_cap, Jitter::Spread))
}

/// For waiters that a release's notification wakes (PostgreSQL with its
/// listener): a poll only in case a wake-up was lost, `poll_cap` apart
/// (jittered) from the first. Polling from 2 ms as [`policy`] does made each of
/// 64 notified waiters attempt about eight times in its first quarter second.
pub(crate) fn fallback_policy(poll_cap: Duration) -> WaitPolicy {
    WaitPolicy::DEFAULT.with_poll(Backoff::new(poll_cap, poll_cap, Jitter::Spread))
}

/// One run of the acquiring statement.
struct Statement<F, G> {
    wake: Arc<Notify>,
    attempt: F,
    give_up: G,
}

#[async_trait]
impl<F, Fut, G, GFut> Contender for Statement<F, G>
where
    F: FnMut() -> Fut + Send,
    Fut: Future<Output = Result<Option<Grant>>> + Send,
    G: FnMut() -> GFut + Send,
    GFut: Future<Output = ()> + Send,
{
    async fn attempt(&mut self) -> Result<Attempt> {
        let armed = Armed::new([self.wake.clone()]);
        Ok(match (self.attempt)().await {
            Ok(Some(grant)) => Attempt::Granted(grant),
            Ok(None) => Attempt::Busy(armed.busy()),
            Err(e) => return failed(e),
        })
    }

    async fn give_up(&mut self, _why: &LockError) {
        (self.give_up)().await;
    }
}

/// Wake-ups armed before an attempt, so that one that comes while the attempt
/// runs is not missed.
pub(crate) struct Armed(Vec<Pin<Box<OwnedNotified>>>);

impl Armed {
    /// Arms each of `wakes` now.
    pub(crate) fn new(wakes: impl IntoIterator<Item = Arc<Notify>>) -> Self {
        Self(
            wakes
                .into_iter()
                .map(|wake| {
                    let mut woken = Box::pin(wake.notified_owned());
                    woken.as_mut().enable();
                    woken
                })
                .collect(),
        )
    }

    /// The refused attempt's [`Busy`]: attempt again at the first wake-up.
    pub(crate) fn busy(mut self) -> Busy {
        Busy::woken_by(async move {
            std::future::poll_fn(|cx| {
                if self
                    .0
                    .iter_mut()
                    .any(|woken| woken.as_mut().poll(cx).is_ready())
                {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
            .await;
            Ok(())
        })
    }
}

/// An attempt that failed with `e`: transient if its connection failed
/// ([`is_transient`]), else the acquire's error.
pub(crate) fn failed(e: LockError) -> Result<Attempt> {
    if is_transient(&e) {
        Ok(Attempt::Transient(e))
    } else {
        Err(e)
    }
}
