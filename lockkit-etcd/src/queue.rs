//! Acquire: the revision-ordered queue of etcd's concurrency mutex.
//!
//! 1. One txn puts our entry with our lease (creating it if its create_revision
//!    is 0, else refreshing its lease), and reads our entry and the queue's first
//!    entry (smallest create_revision).
//! 2. If the first is us, the lock is ours; the token is our create_revision.
//! 3. Otherwise we watch only our predecessor (the largest create_revision below
//!    ours) for its deletion, from the revision we read it at, so a delete in
//!    between is not missed. One release wakes one waiter: no herd.
//! 4. On waking we confirm our lease with a keep-alive round *before* reading the
//!    queue again, so we never report a grant on an expired lease (etcd issue
//!    11456), and the deadline counts from that round.

use std::sync::Arc;
use std::time::Duration;

use etcd_client::{
    Compare, CompareOp, EventType, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp,
    TxnOpResponse, WatchFilterType, WatchOptions,
};
use lockkit_core::{AcquireRequest, FencingToken, Grant, LockError, Result, Wait};
use tokio::time::{Instant, sleep_until};

use super::driver::Inner;
use super::error::{etcd_error, is_lease_not_found, within};
use super::holds::{Record, delete_if};
use super::keys;
use super::lease::Lease;
/// Backoff between retries of failed requests while waiting.
const RETRY_FIRST: Duration = Duration::from_millis(20);
const RETRY_MAX: Duration = Duration::from_millis(500);
/// How many times an acquire starts over because its lease vanished.
const MAX_REQUEUES: u32 = 5;
/// How long a `try_lock` keeps retrying transient errors (an endpoint down, an
/// election) before it reports them; a waiting acquire retries within its wait.
const TRANSIENT_PATIENCE: Duration = Duration::from_millis(750);

/// Our entry after the enqueue txn.
struct Entry {
    rev: i64,
    created: bool,
    first: Option<i64>,
}

/// How a wait ended.
enum Turn {
    Granted(Instant),
    /// Our entry or lease is gone: enqueue again.
    Requeue,
}

fn first_of(queue: &str) -> TxnOp {
    TxnOp::get(
        queue,
        Some(
            GetOptions::new()
                .with_prefix()
                .with_sort(SortTarget::Create, SortOrder::Ascend)
                .with_limit(1)
                .with_keys_only(),
        ),
    )
}

fn create_rev(op: Option<&TxnOpResponse>) -> Option<i64> {
    match op {
        Some(TxnOpResponse::Get(g)) => g.kvs().first().map(|kv| kv.create_revision()),
        _ => None,
    }
}

impl Inner {
    /// The whole acquire.
    pub(crate) async fn acquire(&self, req: &AcquireRequest) -> Result<Grant> {
        let started = Instant::now();
        let name = keys::entry(&self.prefix, &req.key, &req.owner);
        let queue = keys::queue(&self.prefix, &req.key);
        let mut requeues = 0;
        let mut backoff = RETRY_FIRST;
        loop {
            let entry = match self.enqueue_once(&name, &queue, req).await {
                Ok(ok) => ok,
                Err(EnqueueError::LeaseGone) if requeues < MAX_REQUEUES => {
                    requeues += 1;
                    continue;
                }
                Err(EnqueueError::LeaseGone) => {
                    return Err(LockError::Backend {
                        driver: super::NAME,
                        message: "the lease kept vanishing while enqueueing".into(),
                        source: None,
                    });
                }
                Err(EnqueueError::Other(e)) if e.is_retryable() => {
                    // An endpoint down or an election: the balanced channel may
                    // pick a live member next time.
                    let patience = match req.wait {
                        Wait::NoWait => Some(started + TRANSIENT_PATIENCE),
                        other => other.deadline(),
                    };
                    let retry = Instant::now() + backoff;
                    if patience.is_some_and(|p| retry >= p) {
                        return Err(e);
                    }
                    tracing::debug!(error = %e, "enqueue failed; retrying");
                    backoff = (backoff * 2).min(RETRY_MAX);
                    tokio::select! {
                        _ = sleep_until(retry) => continue,
                        _ = req.cancel.cancelled() => return Err(req.cancelled()),
                    }
                }
                Err(EnqueueError::Other(e)) => return Err(e),
            };
            let (entry, lease, sent) = entry;
            if entry.first == Some(entry.rev) {
                let deadline = (sent + req.ttl).min(lease.alive_until());
                return Ok(self.granted(req, name, entry.rev, lease, deadline));
            }
            if req.wait == Wait::NoWait {
                // try_lock leaves no queue entry behind.
                if entry.created && !delete_if(&self.client, &name, entry.rev).await {
                    self.holds.delete_later(name, entry.rev);
                }
                return Err(LockError::Contended {
                    key: req.key.to_string(),
                });
            }
            match self
                .wait_turn(req, &name, &queue, entry.rev, &lease, started)
                .await
            {
                Ok(Turn::Granted(deadline)) => {
                    return Ok(self.granted(req, name, entry.rev, lease, deadline));
                }
                Ok(Turn::Requeue) if requeues < MAX_REQUEUES => {
                    tracing::debug!(key = %req.key, "our queue entry or lease vanished; enqueueing again");
                    requeues += 1;
                }
                Ok(Turn::Requeue) => {
                    return Err(LockError::Backend {
                        driver: super::NAME,
                        message: "the queue entry kept vanishing while waiting".into(),
                        source: None,
                    });
                }
                Err(e) => {
                    // A timed-out or cancelled acquire deletes its entry.
                    if entry.created && !delete_if(&self.client, &name, entry.rev).await {
                        self.holds.delete_later(name, entry.rev);
                    }
                    return Err(e);
                }
            }
        }
    }

    /// Gets a confirmed lease for the request's TTL and enqueues on it; returns
    /// the entry, the lease, and when the enqueue was sent.
    async fn enqueue_once(
        &self,
        name: &str,
        queue: &str,
        req: &AcquireRequest,
    ) -> std::result::Result<(Entry, Arc<Lease>, Instant), EnqueueError> {
        let lease = self
            .leases
            .for_ttl(&self.client, req.ttl)
            .await
            .map_err(EnqueueError::Other)?;
        // At least 2/3 of the TTL left on the lease, so a watchdog renewing at
        // ttl/3 is in time.
        let since = Instant::now()
            .checked_sub(req.ttl / 3)
            .unwrap_or_else(Instant::now);
        match lease
            .confirm(&self.client, since, &self.leases.rounds)
            .await
        {
            Ok(_) => {}
            Err(e) if e.is_lost() => {
                self.leases.forget(&lease);
                return Err(EnqueueError::LeaseGone);
            }
            Err(e) => return Err(EnqueueError::Other(e)),
        }
        let sent = Instant::now();
        match self.enqueue(name, queue, &lease, req).await {
            Ok(entry) => Ok((entry, lease, sent)),
            Err(EnqueueError::LeaseGone) => {
                self.leases.forget(&lease);
                Err(EnqueueError::LeaseGone)
            }
            Err(e) => Err(e),
        }
    }

    fn granted(
        &self,
        req: &AcquireRequest,
        name: String,
        rev: i64,
        lease: Arc<Lease>,
        deadline: Instant,
    ) -> Grant {
        self.holds.keep(&name);
        let effective = lease.ttl.max(req.ttl);
        self.holds.insert(name, Record::new(rev, lease, deadline));
        let grant = Grant::new(
            req.key.clone(),
            req.owner.clone(),
            FencingToken(u64::try_from(rev).unwrap_or(0)),
            deadline,
        );
        if effective == req.ttl {
            grant
        } else {
            // The lease is whole seconds, and etcd raises it to 1.5 × its election
            // timeout: a holder that dies keeps the lock that long.
            grant.with_effective_ttl(effective)
        }
    }

    /// One txn: put our entry with `lease` (create or refresh), read it and the
    /// queue's first entry.
    async fn enqueue(
        &self,
        name: &str,
        queue: &str,
        lease: &Lease,
        req: &AcquireRequest,
    ) -> std::result::Result<Entry, EnqueueError> {
        let value = req.owner.label().unwrap_or("").to_string();
        let ops = || {
            [
                TxnOp::put(
                    name,
                    value.clone(),
                    Some(PutOptions::new().with_lease(lease.id)),
                ),
                TxnOp::get(name, None),
                first_of(queue),
            ]
        };
        let txn = Txn::new()
            .when([Compare::create_revision(name, CompareOp::Equal, 0)])
            .and_then(ops())
            .or_else(ops());
        let mut kv = self.client.kv_client();
        let resp = match tokio::time::timeout(self.timeouts.request, kv.txn(txn)).await {
            Ok(Ok(resp)) => resp,
            Ok(Err(e)) if is_lease_not_found(&e) => return Err(EnqueueError::LeaseGone),
            Ok(Err(e)) => return Err(EnqueueError::Other(etcd_error(e))),
            Err(_) => {
                return Err(EnqueueError::Other(LockError::Connection {
                    driver: super::NAME,
                    message: format!(
                        "enqueue: no answer from etcd within {} (request_timeout_ms)",
                        lockkit_core::human_duration(self.timeouts.request)
                    ),
                    source: None,
                }));
            }
        };
        let ops = resp.op_responses();
        let rev = create_rev(ops.get(1)).ok_or_else(|| {
            EnqueueError::Other(LockError::Backend {
                driver: super::NAME,
                message: "the enqueue txn did not return our entry".into(),
                source: None,
            })
        })?;
        Ok(Entry {
            rev,
            created: resp.succeeded(),
            first: create_rev(ops.get(2)),
        })
    }

    /// Waits until our entry (at `rev`) is first, keeping `lease` alive meanwhile.
    async fn wait_turn(
        &self,
        req: &AcquireRequest,
        name: &str,
        queue: &str,
        rev: i64,
        lease: &Lease,
        started: Instant,
    ) -> Result<Turn> {
        let mut backoff = RETRY_FIRST;
        loop {
            let until = req.keep_waiting(started)?;
            let step = async {
                if let Some((pred, at)) = self.predecessor(queue, rev).await? {
                    self.await_delete(req, &pred, at, lease, until).await?;
                }
                self.check_turn(name, queue, rev, lease, req.ttl).await
            };
            match step.await {
                Ok(Some(turn)) => return Ok(turn),
                Ok(None) => backoff = RETRY_FIRST,
                Err(e) if e.is_retryable() => {
                    // A failover or a broken connection: try again, within the wait.
                    tracing::debug!(error = %e, "queue request failed while waiting; retrying");
                    let retry = Instant::now() + backoff;
                    backoff = (backoff * 2).min(RETRY_MAX);
                    tokio::select! {
                        _ = sleep_until(until.map_or(retry, |u| u.min(retry))) => {}
                        _ = req.cancel.cancelled() => return Err(req.cancelled()),
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Our predecessor's key, and the revision it was read at; `None` if nobody
    /// is ahead of us.
    async fn predecessor(&self, queue: &str, rev: i64) -> Result<Option<(Vec<u8>, i64)>> {
        let opts = GetOptions::new()
            .with_prefix()
            .with_max_create_revision(rev - 1)
            .with_sort(SortTarget::Create, SortOrder::Descend)
            .with_limit(1)
            .with_keys_only();
        let mut kv = self.client.kv_client();
        let resp = within(
            self.timeouts.request,
            "read predecessor",
            kv.get(queue, Some(opts)),
        )
        .await?;
        let at = resp.header().map_or(0, |h| h.revision());
        Ok(resp.kvs().first().map(|kv| (kv.key().to_vec(), at)))
    }

    /// Waits for `pred` to be deleted after revision `at`, renewing `lease`
    /// every third of its TTL. Returns on the delete, or when the watch breaks
    /// (the caller re-reads the queue).
    async fn await_delete(
        &self,
        req: &AcquireRequest,
        pred: &[u8],
        at: i64,
        lease: &Lease,
        until: Option<Instant>,
    ) -> Result<()> {
        let opts = WatchOptions::new()
            .with_start_revision(at + 1)
            .with_filters([WatchFilterType::NoPut]);
        let mut watches = self.client.watch_client();
        let mut watch = within(
            self.timeouts.request,
            "watch predecessor",
            watches.watch(pred.to_vec(), Some(opts)),
        )
        .await?;
        let far = Instant::now() + Duration::from_secs(3600 * 24 * 365);
        let every = (lease.ttl / 3).max(Duration::from_millis(100));
        let mut renew_at = Instant::now() + every;
        loop {
            tokio::select! {
                msg = watch.message() => match msg {
                    Ok(Some(resp)) => {
                        let deleted = resp.events().iter().any(|e| e.event_type() == EventType::Delete);
                        if deleted || resp.canceled() {
                            return Ok(());
                        }
                    }
                    Ok(None) => return Ok(()),
                    Err(e) => return Err(etcd_error(e)),
                },
                _ = sleep_until(renew_at) => {
                    renew_at = Instant::now() + every;
                    match lease.confirm(&self.client, Instant::now(), &self.leases.rounds).await {
                        Ok(_) => {}
                        // Our entry went with the lease: the check re-enqueues.
                        Err(e) if e.is_lost() => return Ok(()),
                        Err(e) => tracing::debug!(error = %e, "keep-alive failed while waiting"),
                    }
                }
                _ = sleep_until(until.unwrap_or(far)) => return Ok(()),
                _ = req.cancel.cancelled() => return Err(req.cancelled()),
            }
        }
    }

    /// Confirms our lease, then reads the queue: `Some(Granted)` if we are first,
    /// `Some(Requeue)` if our entry is gone, `None` if someone is still ahead.
    async fn check_turn(
        &self,
        name: &str,
        queue: &str,
        rev: i64,
        lease: &Lease,
        ttl: Duration,
    ) -> Result<Option<Turn>> {
        match lease
            .confirm(&self.client, Instant::now(), &self.leases.rounds)
            .await
        {
            Ok(_) => {}
            Err(e) if e.is_lost() => {
                self.leases.forget(lease);
                return Ok(Some(Turn::Requeue));
            }
            Err(e) => return Err(e),
        }
        let sent = Instant::now();
        let mut kv = self.client.kv_client();
        let txn = Txn::new().and_then([TxnOp::get(name, None), first_of(queue)]);
        let resp = within(self.timeouts.request, "read queue", kv.txn(txn)).await?;
        let ops = resp.op_responses();
        if create_rev(ops.first()) != Some(rev) {
            return Ok(Some(Turn::Requeue));
        }
        match create_rev(ops.get(1)) {
            Some(first) if first == rev => {
                Ok(Some(Turn::Granted((sent + ttl).min(lease.alive_until()))))
            }
            Some(first) if first < rev => Ok(None),
            _ => Ok(Some(Turn::Requeue)),
        }
    }
}

/// Why an enqueue failed.
enum EnqueueError {
    /// The server no longer has the lease.
    LeaseGone,
    Other(LockError),
}
