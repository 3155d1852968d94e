//! How a SQL driver waits: retry the acquiring statement when woken (in-process
//! release, Postgres NOTIFY) or after a jittered backoff, whichever comes first.

use std::future::Future;
use std::time::Duration;

use lockkit_core::{AcquireRequest, Grant, Result};
use tokio::sync::Notify;
use tokio::time::{Instant, sleep_until};

/// The first pause between attempts.
pub(crate) const FIRST: Duration = Duration::from_millis(2);

/// The pause sequence: doubling from [`FIRST`] to a cap, each with ±50 % jitter so
/// waiters do not poll in lockstep.
#[derive(Debug)]
pub(crate) struct Backoff {
    next: Duration,
    cap: Duration,
}

impl Backoff {
    pub(crate) fn new(cap: Duration) -> Self {
        Self { next: FIRST, cap }
    }

    pub(crate) fn next_pause(&mut self) -> Duration {
        let base = self.next;
        self.next = (self.next * 2).min(self.cap);
        base.mul_f64(fastrand::f64() + 0.5)
    }
}

/// Runs `attempt` until it grants, the wait runs out, or the caller cancels.
///
/// `wake` is registered *before* each attempt, so a release that lands between the
/// attempt and the wait is not missed. `poll_cap` bounds the pause when no wake-up
/// comes (a lost notification, another process without notifications).
pub(crate) async fn acquire_polling<F, Fut>(
    req: &AcquireRequest,
    wake: &Notify,
    poll_cap: Duration,
    mut attempt: F,
) -> Result<Grant>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<Grant>>>,
{
    let started = Instant::now();
    let mut backoff = Backoff::new(poll_cap);
    loop {
        let woken = wake.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        if let Some(grant) = attempt().await? {
            return Ok(grant);
        }
        let give_up = req.keep_waiting(started)?;
        let pause = Instant::now() + backoff.next_pause();
        let until = give_up.map_or(pause, |d| d.min(pause));
        tokio::select! {
            _ = woken => {}
            _ = sleep_until(until) => {}
            _ = req.cancel.cancelled() => return Err(req.cancelled()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_grow_to_the_cap_with_jitter() {
        let cap = Duration::from_millis(50);
        let mut b = Backoff::new(cap);
        let pauses: Vec<Duration> = (0..20).map(|_| b.next_pause()).collect();
        assert!(pauses[0] <= FIRST.mul_f64(1.5));
        assert!(pauses.iter().all(|p| *p <= cap.mul_f64(1.5)));
        assert!(pauses[19] >= cap.mul_f64(0.5));
    }
}
