//! One `LISTEN` connection per driver: wakes the driver's waiters on every release.

use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgListener;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// Aborts the listener task when the last clone of the driver goes.
#[derive(Debug)]
pub(super) struct Listener(JoinHandle<()>);

impl Drop for Listener {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Listens on `channel` and calls `wake.notify_waiters()` per notification.
/// Reconnects with backoff; waiters poll meanwhile, so nothing waits forever.
pub(super) fn spawn(pool: PgPool, channel: String, wake: Arc<Notify>) -> Listener {
    Listener(tokio::spawn(async move {
        let mut pause = Duration::from_millis(50);
        loop {
            let mut listener = match PgListener::connect_with(&pool).await {
                Ok(l) => l,
                Err(error) => {
                    tracing::debug!(%error, "LISTEN connection failed; retrying");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(5));
                    continue;
                }
            };
            if listener.listen(&channel).await.is_err() {
                tokio::time::sleep(pause).await;
                continue;
            }
            pause = Duration::from_millis(50);
            // Anything released while we were not listening: wake everyone once.
            wake.notify_waiters();
            while let Ok(_notification) = listener.recv().await {
                wake.notify_waiters();
            }
        }
    }))
}
