//! Counting the masters' answers to one round: how many said yes, whether a
//! quorum could still answer, and the error when it could not.

use lockkit_core::LockError;

use super::master::Reply;

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
