//! One renewal task per [`crate::Locker`], renewing every watched hold at `ttl / 3`
//! with a single [`crate::LockDriver::extend_many`] call per round.

use std::sync::{Arc, Weak};

use tokio::sync::Notify;
use tokio::time::{Instant, sleep_until};

use super::hold::LostReason;
use super::locker::Inner;
use crate::driver::Renewal;

/// Runs until the locker is dropped.
pub(crate) async fn run(inner: Weak<Inner>, wake: Arc<Notify>) {
    loop {
        let next = {
            let Some(inner) = inner.upgrade() else { return };
            let now = Instant::now();
            let (due, next) = inner.watched_holds(now);
            if !due.is_empty() {
                let renewals: Vec<Renewal> = due
                    .iter()
                    .filter_map(|h| {
                        h.renew_ttl
                            .map(|ttl| Renewal::new(h.key.clone(), h.owner.clone(), ttl))
                    })
                    .collect();
                let sent_at = Instant::now();
                let results = inner.driver.extend_many(&renewals).await;
                for (hold, result) in due.iter().zip(results) {
                    if hold.is_released() {
                        continue;
                    }
                    hold.meter
                        .labels
                        .renewal(matches!(result, Ok(d) if d > Instant::now()));
                    match result {
                        Ok(deadline) if deadline > Instant::now() => {
                            hold.renewed(deadline, sent_at);
                        }
                        Ok(_) => hold.mark_lost(LostReason::Expired),
                        Err(e) if e.is_lost() => {
                            tracing::warn!(key = %hold.key, error = %e, "lock lost: renewal refused");
                            hold.mark_lost(LostReason::Gone);
                        }
                        Err(e) => {
                            if Instant::now() >= hold.deadline() {
                                tracing::warn!(key = %hold.key, error = %e, "lock lost: lease ran out while renewals failed");
                                hold.mark_lost(LostReason::Expired);
                            } else {
                                tracing::debug!(key = %hold.key, error = %e, "renewal failed; retrying");
                                hold.retry_renewal();
                            }
                        }
                    }
                }
                continue;
            }
            next
        };
        // No strong reference while sleeping: dropping the Locker wakes us to exit.
        let notified = wake.notified();
        match next {
            Some(at) => {
                tokio::select! {
                    _ = sleep_until(at) => {}
                    _ = notified => {}
                }
            }
            None => notified.await,
        }
    }
}
