//! [`wait_for_grant`]: the one wait loop.

use tokio::time::{Instant, sleep_until};

use super::attempt::{Attempt, Busy, Contender};
use super::backoff::Pauses;
use super::policy::{Patience, WaitPolicy};
use crate::driver::{AcquireRequest, Grant, Wait};
use crate::error::{LockError, Result};

/// Attempts until `contender` grants, the wait of `req` runs out, `req` is
/// cancelled, or an attempt fails for good.
///
/// After a [`Busy`] attempt it waits for the first of: the wake-up, the retry time,
/// the poll pause, the wait's deadline, cancellation. The poll pause applies when
/// the attempt gave no wake-up or no retry time (a driver that names both trusts
/// its wake-up until then). An [`Attempt::Transient`] failure, or a wake-up that
/// fails with a retryable error ([`LockError::is_retryable`]), is attempted again
/// as [`Patience`] allows; any other error ends the acquire. Whenever the wait ends
/// without a grant, [`Contender::give_up`] runs first.
///
/// # Errors
///
/// [`LockError::Contended`] after one busy attempt of a [`Wait::NoWait`],
/// [`LockError::Timeout`] once the deadline passes, [`LockError::Cancelled`], a
/// transient failure beyond patience, or an attempt's error.
pub(crate) async fn wait_for_grant<C>(
    req: &AcquireRequest,
    backend: &'static str,
    policy: &WaitPolicy,
    contender: &mut C,
) -> Result<Grant>
where
    C: Contender + ?Sized,
{
    let started = Instant::now();
    let mut polls = policy.poll.pauses();
    let mut transient = Transient::new(&policy.transient);
    // Why the next attempt is made: none for the first.
    let mut cause = None;
    loop {
        if let Some(cause) = cause.take() {
            count_attempt(backend, cause);
        }
        let busy = match contender.attempt().await {
            Ok(Attempt::Granted(grant)) => return Ok(grant),
            Ok(Attempt::Busy(busy)) => {
                transient.end_run();
                busy
            }
            Ok(Attempt::Transient(e)) => {
                let Some(until) = transient.retry_until(req, started) else {
                    return fail(contender, e).await;
                };
                tracing::debug!(key = %req.key, error = %e, "transient failure; attempting again");
                if let Err(e) = pause(req, until, None).await {
                    return fail(contender, e).await;
                }
                cause = Some(Cause::Retried);
                continue;
            }
            Err(e) => return fail(contender, e).await,
        };
        let deadline = match req.keep_waiting(started) {
            Ok(deadline) => deadline,
            Err(e) => return fail(contender, e).await,
        };
        let until = next_attempt(&busy, &mut polls, deadline);
        cause = Some(match pause(req, until, busy.wake).await {
            Ok(resumed) => resumed,
            // A wake-up source that broke (a watch, a blocking query): as a
            // transient failure of the attempt.
            Err(e) if e.is_retryable() => {
                let Some(until) = transient.retry_until(req, started) else {
                    return fail(contender, e).await;
                };
                tracing::debug!(key = %req.key, error = %e, "wake-up failed; attempting again");
                if let Err(e) = pause(req, until, None).await {
                    return fail(contender, e).await;
                }
                Cause::Retried
            }
            Err(e) => return fail(contender, e).await,
        });
    }
}

/// Why an attempt after the first is made: the [`names::CAUSE`] label of
/// [`names::WAIT_ATTEMPTS`].
///
/// [`names::CAUSE`]: crate::metrics::names::CAUSE
/// [`names::WAIT_ATTEMPTS`]: crate::metrics::names::WAIT_ATTEMPTS
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    /// The backend's wake-up came.
    Woken,
    /// The pause ran out first.
    Polled,
    /// After a transient failure.
    Retried,
}

/// Counts one attempt after the first (the `metrics` feature).
fn count_attempt(_backend: &'static str, _cause: Cause) {
    #[cfg(feature = "metrics")]
    {
        use crate::metrics::names;
        let cause = match _cause {
            Cause::Woken => "woken",
            Cause::Polled => "polled",
            Cause::Retried => "retried",
        };
        let labels = [
            metrics::Label::from_static_parts(names::BACKEND, _backend),
            metrics::Label::from_static_parts(names::CAUSE, cause),
        ];
        metrics::counter!(names::WAIT_ATTEMPTS, labels.iter()).increment(1);
    }
}

/// When to attempt again after `busy`, at the latest.
fn next_attempt(busy: &Busy, polls: &mut Pauses, deadline: Option<Instant>) -> Instant {
    let poll = (busy.wake.is_none() || busy.retry_at.is_none())
        .then(|| Instant::now() + polls.next_pause());
    [busy.retry_at, poll, deadline]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or_else(Instant::now)
}

/// Waits until `until` or `wake`, whichever is first (and says which: a
/// [`Cause::Polled`] pause, the wait's deadline included, or [`Cause::Woken`]);
/// cancellation and a wake-up's error end the acquire.
async fn pause(req: &AcquireRequest, until: Instant, wake: Option<super::Wake>) -> Result<Cause> {
    let wake = async {
        match wake {
            Some(wake) => wake.await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        () = req.cancel.cancelled() => Err(req.cancelled()),
        woken = wake => woken.map(|()| Cause::Woken),
        () = sleep_until(until) => Ok(Cause::Polled),
    }
}

async fn fail<C: Contender + ?Sized>(contender: &mut C, e: LockError) -> Result<Grant> {
    contender.give_up(&e).await;
    Err(e)
}

/// Patience with one acquire's transient failures.
struct Transient<'a> {
    patience: &'a Patience,
    pauses: Pauses,
    /// When the current run of consecutive transient failures began.
    run_since: Option<Instant>,
}

impl<'a> Transient<'a> {
    fn new(patience: &'a Patience) -> Self {
        Self {
            patience,
            pauses: patience.backoff.pauses(),
            run_since: None,
        }
    }

    /// A busy attempt: the next transient failure starts a new run (its pauses go
    /// on growing: failures that keep coming back are retried ever more slowly).
    fn end_run(&mut self) {
        self.run_since = None;
    }

    /// After a transient failure: until when to pause before attempting again, or
    /// `None` when patience is spent.
    fn retry_until(&mut self, req: &AcquireRequest, started: Instant) -> Option<Instant> {
        let now = Instant::now();
        let run_since = *self.run_since.get_or_insert(now);
        let patient_until = match req.wait {
            Wait::NoWait => Some(started + self.patience.no_wait),
            Wait::Until(deadline) => Some(match self.patience.with_deadline {
                Some(run) => deadline.min(run_since + run),
                None => deadline,
            }),
            Wait::Forever => self.patience.forever.map(|run| run_since + run),
        };
        if patient_until.is_some_and(|end| now >= end) {
            return None;
        }
        let retry = now + self.pauses.next_pause();
        Some(patient_until.map_or(retry, |end| end.min(retry)))
    }
}

#[cfg(test)]
mod tests;
