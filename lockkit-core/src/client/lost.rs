//! The future behind [`crate::LockGuard::lost`].

use std::future::Future;
use std::sync::Arc;

use tokio::time::{Instant, sleep_until};

use super::hold::{Hold, LostReason};

/// Resolves when `hold` can no longer be trusted: marked lost by the watchdog, its
/// driver's [`crate::LossSignal`] fired, or its lease deadline passed. Never resolves for a released hold.
pub(crate) fn lost_future(hold: &Arc<Hold>) -> impl Future<Output = LostReason> + Send + 'static {
    let mut rx = hold.state.subscribe();
    let loss = hold.loss.clone();
    async move {
        let backend_said = async {
            match &loss {
                Some(signal) => LostReason::SessionEnded(signal.fired().await),
                None => std::future::pending().await,
            }
        };
        tokio::pin!(backend_said);
        loop {
            let (deadline, lost) = {
                let st = rx.borrow_and_update();
                (st.deadline, st.lost.clone())
            };
            if let Some(reason) = lost {
                return reason;
            }
            tokio::select! {
                reason = &mut backend_said => return reason,
                _ = sleep_until(deadline) => {
                    let st = rx.borrow();
                    if st.lost.is_none() && st.deadline <= Instant::now() {
                        return LostReason::Expired;
                    }
                }
                changed = rx.changed() => {
                    if changed.is_err() {
                        // Every guard is gone: the hold was released, nothing to signal.
                        std::future::pending::<()>().await;
                    }
                }
            }
        }
    }
}
