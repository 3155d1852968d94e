//! A semaphore's queue drained one release at a time, for drivers' tests that
//! count what the server saw per release (no herd).

use std::time::Duration;

use lockkit_core::{LockError, LockGuard, Locker};
use tokio::sync::mpsc;
use tokio::time::timeout;

/// A semaphore of `limit` permits on `key`, fully held, with waiters queued
/// behind it, each on its own locker, ready to [`drain`](Self::drain).
#[derive(Debug)]
pub struct QueuedSemaphore {
    holders: Vec<LockGuard>,
    granted: mpsc::UnboundedReceiver<Result<LockGuard, LockError>>,
    waiters: usize,
    wait: Duration,
}

impl QueuedSemaphore {
    /// Takes every permit with `holders` (one each), queues one acquire for each
    /// of `waiters`, and waits (at most `wait`) until `observer` counts them all
    /// queued.
    ///
    /// # Errors
    ///
    /// A holder refused, an inspection failed, or the waiters did not all queue.
    pub async fn queue(
        key: &str,
        limit: u32,
        holders: Vec<Locker>,
        waiters: Vec<Locker>,
        observer: &Locker,
        wait: Duration,
    ) -> Result<Self, LockError> {
        let mut held = Vec::new();
        for h in holders {
            held.push(h.semaphore(key, limit).try_acquire().await?);
        }
        let (tx, granted) = mpsc::unbounded_channel();
        let count = waiters.len();
        for w in waiters {
            let (tx, key) = (tx.clone(), key.to_owned());
            tokio::spawn(async move {
                let g = w.semaphore(key, limit).acquire().wait(wait).await;
                let _ = tx.send(g);
            });
        }
        crate::until_waiters(observer, key, count, wait).await?;
        Ok(Self {
            holders: held,
            granted,
            waiters: count,
            wait,
        })
    }

    /// Every holder releases, then every waiter as soon as it is granted, one
    /// release at a time. Returns how many releases there were.
    ///
    /// # Errors
    ///
    /// A release failed, or a waiter was not granted within the wait.
    pub async fn drain(mut self) -> Result<u32, LockError> {
        let mut released = 0;
        for h in self.holders {
            h.release().await?;
            released += 1;
        }
        for _ in 0..self.waiters {
            let g = timeout(self.wait, self.granted.recv())
                .await
                .map_err(|_| LockError::Config("a waiter was not granted in time".into()))?
                .ok_or_else(|| LockError::Config("a waiter's task ended".into()))??;
            g.release().await?;
            released += 1;
        }
        Ok(released)
    }
}
