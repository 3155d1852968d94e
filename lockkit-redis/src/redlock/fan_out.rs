//! The per-master fan-out: one request sent to every master at once, the round
//! bounded by one deadline, the replies collected in master order.

use std::future::Future;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use redis::RedisResult;
use redis::aio::ConnectionManager;

use super::driver::RedlockDriver;
use super::master::{Master, Reply};

/// Runs one request per master concurrently and returns the replies in master
/// order (the order of `requests`). Stops early (leaving the rest
/// [`Reply::Pending`]) once `enough` holds for the replies so far; otherwise
/// waits for every request, for `limit` at most: a master that has not answered
/// by then has failed, "no answer within `limit`". A request already handed to a
/// connection still runs on its server when it is left.
///
/// One timer bounds the whole round, not one per master: they all start at
/// once, so the bound is the same, and each timer a round registers costs the
/// runtime a wake-up of its timer thread.
pub(super) async fn gather<'m, T, Fut>(
    requests: impl IntoIterator<Item = (&'m Master, Fut)>,
    limit: Duration,
    enough: impl Fn(&[Reply<T>]) -> bool,
) -> Vec<Reply<T>>
where
    Fut: Future<Output = Reply<T>>,
{
    let mut masters = Vec::new();
    let mut running = FuturesUnordered::new();
    for (i, (master, request)) in requests.into_iter().enumerate() {
        masters.push(master);
        running.push(async move { (i, request.await) });
    }
    let mut replies: Vec<Reply<T>> = masters.iter().map(|_| Reply::Pending).collect();
    let collect = async {
        while let Some((i, reply)) = running.next().await {
            if let Some(slot) = replies.get_mut(i) {
                *slot = reply;
            }
            if enough(&replies) {
                return;
            }
        }
    };
    if tokio::time::timeout(limit, collect).await.is_err() {
        for (reply, master) in replies.iter_mut().zip(masters) {
            if matches!(reply, Reply::Pending) {
                *reply = Reply::Failed(master.no_answer(limit));
            }
        }
    }
    replies
}

impl RedlockDriver {
    /// Runs `call` on every master at once, within `limit`, and waits for all of
    /// them: the replies in master order.
    pub(super) async fn on_every_master<T, F, Fut>(&self, limit: Duration, call: F) -> Vec<Reply<T>>
    where
        F: Fn(ConnectionManager) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        gather(
            self.inner.masters.iter().map(|m| (m, m.call(&call))),
            limit,
            |_| false,
        )
        .await
    }
}
