//! Replies that come late. The client gives a connection up after 2/5 of the
//! session timeout without a reply, and reconnects within the session: a request
//! caught in that gap has an unknown outcome, though nothing is wrong with the
//! session. One-shot requests ride it out: a `try_lock` (in `contender.rs`, which
//! knows what a create left behind), and the idempotent requests here (reads, and
//! the delete of one path), sent again until they are answered.

use std::future::Future;
use std::time::Duration;

use lockkit_core::driver::{Backoff, Jitter};
use tokio::time::{Instant, sleep};
use zookeeper_client::Error as ZkError;

use crate::error::outcome_unknown;
use crate::session::Session;

/// How long a one-shot request retries unknown outcomes: the 2/5 of the session
/// timeout after which the client gives a connection up, and 1 s more to
/// reconnect and try again.
pub(crate) fn late_reply_patience(session_timeout: Duration) -> Duration {
    session_timeout * 2 / 5 + Duration::from_secs(1)
}

/// The pauses between sendings of a one-shot request: 20 ms doubling to 200 ms.
const PAUSES: Backoff = Backoff::new(
    Duration::from_millis(20),
    Duration::from_millis(200),
    Jitter::None,
);

/// The reply to a request that may have been sent more than once.
pub(crate) struct Answer<T> {
    /// The last reply.
    pub(crate) reply: Result<T, ZkError>,
    /// Whether an earlier sending went unanswered (and so may have been applied).
    pub(crate) resent: bool,
}

impl Session {
    /// Sends `request`, which must be idempotent, again while its outcome is
    /// unknown and the session lives, for at most [`late_reply_patience`] of the
    /// session's timeout. Pauses: 20 ms doubling to 200 ms.
    pub(crate) async fn answered<T, F>(&self, request: impl FnMut() -> F) -> Answer<T>
    where
        F: Future<Output = Result<T, ZkError>>,
    {
        let patience = late_reply_patience(self.client.session_timeout());
        self.answered_within(patience, PAUSES, request).await
    }

    /// As [`Session::answered`], for at most `patience`, pausing as `backoff`
    /// says between sendings.
    pub(crate) async fn answered_within<T, F>(
        &self,
        patience: Duration,
        backoff: Backoff,
        mut request: impl FnMut() -> F,
    ) -> Answer<T>
    where
        F: Future<Output = Result<T, ZkError>>,
    {
        let give_up = Instant::now() + patience;
        let mut pauses = backoff.pauses();
        let mut resent = false;
        loop {
            let reply = self.within(request()).await;
            let late = matches!(&reply, Err(e) if outcome_unknown(e));
            let pause = pauses.next_pause();
            if !late || Instant::now() + pause >= give_up || self.is_over() {
                return Answer { reply, resent };
            }
            resent = true;
            sleep(pause).await;
        }
    }
}
