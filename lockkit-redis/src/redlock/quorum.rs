//! Sending one request to every master at once, and counting the answers.

use std::future::Future;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use lockkit_core::LockError;

use super::master::Reply;

/// Runs one request per master concurrently and returns the replies in master
/// order. Stops early (leaving the rest [`Reply::Pending`]) once `enough` holds for
/// the replies so far; otherwise waits for every request, each bounded by its own
/// timeout. A request already handed to a connection still runs on its server when
/// it is left pending.
pub(crate) async fn gather<T, Fut>(
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

/// How many replies satisfy `yes`.
pub(crate) fn count<T>(replies: &[Reply<T>], yes: impl Fn(&T) -> bool) -> usize {
    replies
        .iter()
        .filter(|r| matches!(r, Reply::Answered(v) if yes(v)))
        .count()
}

/// How many masters answered at all.
pub(crate) fn answered<T>(replies: &[Reply<T>]) -> usize {
    count(replies, |_| true)
}

/// The failures, for messages.
pub(crate) fn failures<T>(replies: &[Reply<T>]) -> Vec<&str> {
    replies
        .iter()
        .filter_map(|r| match r {
            Reply::Failed(m) => Some(m.as_str()),
            _ => None,
        })
        .collect()
}

/// Whether so many masters failed that a quorum can no longer answer.
pub(crate) fn quorum_unreachable<T>(replies: &[Reply<T>], quorum: usize) -> bool {
    replies.len() - failures(replies).len() < quorum
}

/// The error for a round in which too few masters answered.
pub(crate) fn unreachable_error<T>(replies: &[Reply<T>], quorum: usize) -> LockError {
    let failed = failures(replies);
    let first = failed
        .first()
        .map_or(String::new(), |f| format!("; first failure: {f}"));
    LockError::Connection {
        driver: super::NAME,
        message: format!(
            "Redlock quorum unreachable: {} of {} masters answered, {quorum} needed{first}",
            replies.len() - failed.len(),
            replies.len(),
        ),
        source: None,
    }
}
