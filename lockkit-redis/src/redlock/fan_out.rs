//! The per-master fan-out: one request sent to every master at once, each bounded
//! by its own timeout, the replies collected in master order.

use std::future::Future;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use redis::RedisResult;
use redis::aio::ConnectionManager;

use super::driver::RedlockDriver;
use super::master::Reply;

/// Runs one request per master concurrently and returns the replies in master
/// order. Stops early (leaving the rest [`Reply::Pending`]) once `enough` holds for
/// the replies so far; otherwise waits for every request, each bounded by its own
/// timeout. A request already handed to a connection still runs on its server when
/// it is left pending.
pub(super) async fn gather<T, Fut>(
    requests: impl IntoIterator<Item = Fut>,
    enough: impl Fn(&[Reply<T>]) -> bool,
) -> Vec<Reply<T>>
where
    Fut: Future<Output = Reply<T>>,
{
    let mut running: FuturesUnordered<_> = requests
        .into_iter()
        .enumerate()
        .map(|(i, f)| async move { (i, f.await) })
        .collect();
    let mut replies: Vec<Reply<T>> = (0..running.len()).map(|_| Reply::Pending).collect();
    while let Some((i, reply)) = running.next().await {
        if let Some(slot) = replies.get_mut(i) {
            *slot = reply;
        }
        if enough(&replies) {
            break;
        }
    }
    replies
}

impl RedlockDriver {
    /// Runs `call` on every master at once, each within `limit`, and waits for all
    /// of them: the replies in master order.
    pub(super) async fn on_every_master<T, F, Fut>(&self, limit: Duration, call: F) -> Vec<Reply<T>>
    where
        F: Fn(ConnectionManager) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        gather(
            self.inner.masters.iter().map(|m| m.timed(limit, &call)),
            |_| false,
        )
        .await
    }
}
