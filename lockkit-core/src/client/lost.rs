//! The future behind [`crate::LockGuard::lost`].

use std::future::Future;
use std::sync::Arc;

use tokio::time::{Instant, sleep_until};

use super::hold::{Hold, LostReason};

/// Resolves when `hold` can no longer be trusted: marked lost by the watchdog or a
/// driver, or its lease deadline passed. Never resolves for a released hold.
pub(crate) fn lost_future(hold: &Arc<Hold>) -> impl Future<Output = LostReason> + Send + 'static {
    let mut rx = hold.state.subscribe();
    async move {
        loop {
            let (deadline, lost) = {
                let st = rx.borrow_and_update();
                (st.deadline, st.lost.clone())
            };
            if let Some(reason) = lost {
                return reason;
            }
            tokio::select! {
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
