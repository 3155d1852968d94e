//! Waiting for one's turn in the queue: what a waiter watches
//! ([`predecessor`]), and the watch itself ([`await_delete`]), which keeps the
//! waiter's lease alive meanwhile.

use std::sync::Arc;
use std::time::Duration;

use etcd_client::{EventType, SortOrder, SortTarget, WatchFilterType, WatchOptions};
use lockkit_core::{LockMode, Result};
use tokio::time::{Instant, sleep_until};

use super::connection::Inner;
use super::error::etcd_error;
use super::lease::Lease;
use super::permit;
use super::queue::ahead;
use super::request::within;

/// What a waiter watches, from the revision after `at`.
#[derive(Debug)]
pub(crate) struct Watch {
    key: Vec<u8>,
    /// The end of a watched range (the queue's), if not one key.
    range_end: Option<Vec<u8>>,
    /// Whether a put wakes it too (a permit passing the turn on).
    puts: bool,
    at: i64,
}

impl Watch {
    /// Whether a permit passing the turn on wakes it: it may never come (the pass
    /// is best effort), so such a wait is bounded.
    pub(crate) fn awaits_a_pass(&self) -> bool {
        self.puts && self.range_end.is_none()
    }

    /// The delete of one entry.
    pub(crate) fn delete_of(key: Vec<u8>, at: i64) -> Self {
        Self {
            key,
            range_end: None,
            puts: false,
            at,
        }
    }

    /// The delete or rewrite of one entry.
    pub(crate) fn change_of(key: Vec<u8>, at: i64) -> Self {
        Self {
            puts: true,
            ..Self::delete_of(key, at)
        }
    }

    /// Any delete in the queue `queue` (a prefix ending in `/`).
    pub(crate) fn any_delete_in(queue: &str, at: i64) -> Self {
        let mut end = queue.as_bytes().to_vec();
        if let Some(last) = end.last_mut() {
            *last += 1;
        }
        Self {
            range_end: Some(end),
            ..Self::delete_of(queue.as_bytes().to_vec(), at)
        }
    }
}

/// What our entry, created at `rev`, waits for: the last entry before ours that an
/// entry of `mode` waits behind (for a permit, [`permit::wait_target`]), to be
/// deleted after the revision it was read at; `None` if nobody is ahead of us.
pub(crate) async fn predecessor(
    inner: &Inner,
    queue: &str,
    rev: i64,
    mode: LockMode,
) -> Result<Option<Watch>> {
    if let Some(limit) = mode.limit() {
        return permit::wait_target(inner, queue, rev, limit).await;
    }
    let opts = ahead(queue, mode)
        .with_max_create_revision(rev - 1)
        .with_sort(SortTarget::Create, SortOrder::Descend)
        .with_limit(1)
        .with_keys_only();
    let mut kv = inner.client.kv_client();
    let resp = within(
        inner.timeouts.request,
        "read predecessor",
        kv.get(queue, Some(opts)),
    )
    .await?;
    let at = resp.header().map_or(0, |h| h.revision());
    Ok(resp
        .kvs()
        .first()
        .map(|kv| Watch::delete_of(kv.key().to_vec(), at)))
}

/// Waits for what `target` names, renewing `lease` every third of its TTL.
/// Returns on it, or when the watch ends or our lease is gone (the next attempt
/// re-reads the queue: invariant E6).
pub(crate) async fn await_delete(
    inner: Arc<Inner>,
    target: Watch,
    lease: Arc<Lease>,
) -> Result<()> {
    let mut opts = WatchOptions::new().with_start_revision(target.at + 1);
    if !target.puts {
        opts = opts.with_filters([WatchFilterType::NoPut]);
    }
    if let Some(end) = target.range_end {
        opts = opts.with_range(end);
    }
    let mut watches = inner.client.watch_client();
    let mut watch = within(
        inner.timeouts.request,
        "watch predecessor",
        watches.watch(target.key, Some(opts)),
    )
    .await?;
    let every = (lease.ttl / 3).max(Duration::from_millis(100));
    let mut renew_at = Instant::now() + every;
    loop {
        tokio::select! {
            msg = watch.message() => match msg {
                Ok(Some(resp)) => {
                    let changed = resp.events().iter().any(|e| {
                        target.puts || e.event_type() == EventType::Delete
                    });
                    if changed || resp.canceled() {
                        return Ok(());
                    }
                }
                Ok(None) => return Ok(()),
                Err(e) => return Err(etcd_error(e)),
            },
            _ = sleep_until(renew_at) => {
                renew_at = Instant::now() + every;
                match inner.confirm(&lease, Instant::now()).await {
                    Ok(_) => {}
                    // Our entry went with the lease: the check re-enqueues.
                    Err(e) if e.is_lost() => return Ok(()),
                    Err(e) => tracing::debug!(error = %e, "keep-alive failed while waiting"),
                }
            }
        }
    }
}
