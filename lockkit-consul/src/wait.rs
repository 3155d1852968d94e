//! How a waiter learns that what refused it may have changed: a blocking query
//! (`?index=&wait=`) on one key (a lock, the contender ahead in a semaphore's
//! queue) or on everything under a semaphore's prefix, bounded by the wait's
//! deadline. It only wakes: the waiter's next attempt decides (invariant C5).

use std::time::Duration;

use lockkit_core::{AcquireRequest, Result};
use tokio::time::Instant;

use crate::api::Api;

/// The longest single blocking query.
const MAX_BLOCK: Duration = Duration::from_secs(300);

/// The longest a blocking query for `req` may wait: to the wait's deadline, at
/// most [`MAX_BLOCK`].
pub(crate) fn block_until(req: &AcquireRequest) -> Instant {
    let longest = Instant::now() + MAX_BLOCK;
    req.wait.deadline().map_or(longest, |d| d.min(longest))
}

/// What a waiter blocks on: one key, or everything under a prefix, from the index
/// it was last seen at.
#[derive(Debug, Clone)]
pub(crate) enum Watch {
    Key(String, u64),
    Prefix(String, u64),
}

impl Watch {
    /// Resolves once what is watched changes past its index (or the blocking
    /// query ends at `until`).
    pub(crate) async fn changed(self, api: Api, until: Instant) -> Result<()> {
        let block = until
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        match self {
            Watch::Key(key, index) => api.kv_get(&key, Some((index, block))).await.map(|_| ()),
            Watch::Prefix(prefix, index) => {
                api.kv_list(&prefix, Some((index, block))).await.map(|_| ())
            }
        }
    }
}
