//! One etcd acquire, as the wait engine drives it: enqueue once, then, while
//! someone is ahead, watch only our predecessor (keeping our lease alive), and
//! confirm the lease before reading the queue again.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::driver::{
    Attempt, Backoff, Busy, Contender, Contention, Jitter, Patience, WaitPolicy,
};
use lockkit_core::driver::{limit_mismatch, refuse_reentry};
use lockkit_core::{AcquireRequest, LockError, LockMode, Result, Wait, async_trait};
use tokio::time::Instant;

use super::connection::Inner;
use super::error::backend;
use super::holds::delete_if;
use super::keys;
use super::lease::Lease;
use super::permit;
use super::queue::{self, EnqueueError, Turn, Verdict};
use super::turn;

/// How many times an acquire starts over because its lease or entry vanished.
const MAX_REQUEUES: u32 = 5;

/// A `try_lock` retries transient errors (an endpoint down, an election) for 750
/// ms before it reports them; a waiting acquire within its wait; pausing 20 ms
/// doubling to 500 ms. Waiters are woken by their predecessor's delete.
const POLICY: WaitPolicy = WaitPolicy::DEFAULT.with_transient(
    Patience::DEFAULT
        .with_no_wait(Duration::from_millis(750))
        .with_backoff(Backoff::new(
            Duration::from_millis(20),
            Duration::from_millis(500),
            Jitter::None,
        )),
);

/// Our entry in the key's queue.
struct Queued {
    rev: i64,
    /// We put it (a retry of the same owner may find it there already).
    created: bool,
    lease: Arc<Lease>,
}

pub(crate) struct Contending<'a> {
    inner: &'a Arc<Inner>,
    req: &'a AcquireRequest,
    /// The mode our entry queues in: the request's, or exclusive for a read
    /// under the owner's own write hold (which covers reading).
    mode: LockMode,
    name: String,
    queue: String,
    queued: Option<Queued>,
    requeues: u32,
}

impl<'a> Contending<'a> {
    /// An acquire of `req`; refused at once if the owner holds the key for
    /// reading and asks to write (no upgrade in place).
    pub(crate) fn new(inner: &'a Arc<Inner>, req: &'a AcquireRequest) -> Result<Self> {
        let entry = |mode| keys::entry(&inner.prefix, &req.key, &req.owner, mode);
        // The mode the owner holds the key in, by this driver's own record.
        let own = [
            LockMode::Exclusive,
            LockMode::Shared,
            LockMode::Permit { limit: 1 },
        ]
        .into_iter()
        .find_map(|m| inner.holds.get(&entry(m)).map(|held| held.mode));
        let mode = match (req.mode, own) {
            (mode, None) => mode,
            (mode, Some(held)) if mode == held => mode,
            // The write hold covers reading.
            (LockMode::Shared, Some(LockMode::Exclusive)) => LockMode::Exclusive,
            (_, Some(held)) => return Err(refuse_reentry(super::driver::NAME, req, held)),
        };
        Ok(Self {
            inner,
            req,
            mode,
            name: entry(mode),
            queue: keys::queue(&inner.prefix, &req.key),
            queued: None,
            requeues: 0,
        })
    }

    pub(crate) fn contention(self) -> Contention<'a> {
        Contention::new(self).with_policy(POLICY)
    }

    /// Counts one more start-over; an error once there were too many.
    fn requeue(&mut self, what: &str) -> Result<()> {
        self.queued = None;
        self.requeues += 1;
        if self.requeues > MAX_REQUEUES {
            return Err(backend(format!(
                "the {what} kept vanishing while acquiring"
            )));
        }
        tracing::debug!(key = %self.req.key, "our queue {what} vanished; enqueueing again");
        Ok(())
    }

    /// A permit whose limit differs from the holders' (our entry is deleted by
    /// `give_up`).
    fn mismatch(&self, theirs: u32) -> LockError {
        limit_mismatch(self.req, theirs, self.req.mode.limit().unwrap_or(0))
    }

    /// Records our hold on `lease` (its key created at `rev`) and grants it.
    fn granted(&self, rev: i64, lease: Arc<Lease>, deadline: Instant) -> Attempt {
        let name = self.name.clone();
        Attempt::Granted(queue::granted(
            self.inner,
            self.req,
            (name, self.mode),
            rev,
            lease,
            deadline,
        ))
    }

    /// Enqueues: granted at once if we are first.
    async fn enqueue(&mut self) -> Result<Option<Attempt>> {
        let (entry, lease, sent) =
            match queue::enqueue_once(self.inner, &self.name, &self.queue, self.mode, self.req)
                .await
            {
                Ok(ok) => ok,
                Err(EnqueueError::LeaseGone) => {
                    self.requeue("lease")?;
                    return Ok(None);
                }
                Err(EnqueueError::Other(e)) if e.is_retryable() => {
                    // The balanced channel may pick a live member next time.
                    return Ok(Some(Attempt::Transient(e)));
                }
                Err(EnqueueError::Other(e)) => return Err(e),
            };
        match entry.verdict {
            Verdict::Holds => {
                let deadline = (sent + self.req.ttl).min(lease.alive_until());
                return Ok(Some(self.granted(entry.rev, lease, deadline)));
            }
            Verdict::Mismatch(theirs) => {
                self.queued = Some(Queued {
                    rev: entry.rev,
                    created: entry.created,
                    lease,
                });
                return Err(self.mismatch(theirs));
            }
            Verdict::Waits => {}
        }
        self.queued = Some(Queued {
            rev: entry.rev,
            created: entry.created,
            lease,
        });
        Ok(None)
    }
}

#[async_trait]
impl Contender for Contending<'_> {
    async fn attempt(&mut self) -> Result<Attempt> {
        loop {
            let Some(q) = &self.queued else {
                if let Some(done) = self.enqueue().await? {
                    return Ok(done);
                }
                if self.queued.is_none() {
                    continue;
                }
                break;
            };
            let turn = queue::check_turn(
                self.inner,
                &self.name,
                &self.queue,
                (q.rev, self.mode),
                &q.lease,
                self.req.ttl,
            )
            .await;
            match turn {
                Ok(Some(Turn::Granted(deadline, modified))) => {
                    let Some(q) = self.queued.take() else {
                        continue;
                    };
                    if self.mode.limit().is_some() {
                        let value =
                            keys::value(self.mode, &self.req.stored_label().unwrap_or_default());
                        let entry = (self.name.clone(), modified);
                        permit::pass_turn(self.inner, entry, value, q.lease.id);
                    }
                    return Ok(self.granted(q.rev, q.lease, deadline));
                }
                Ok(Some(Turn::Mismatch(theirs))) => return Err(self.mismatch(theirs)),
                Ok(Some(Turn::Requeue)) => self.requeue("entry or lease")?,
                Ok(None) => break,
                Err(e) if e.is_retryable() => return Ok(Attempt::Transient(e)),
                Err(e) => return Err(e),
            }
        }
        if self.req.wait == Wait::NoWait {
            // `try_lock` leaves no queue entry behind.
            self.give_up(&LockError::Contended {
                key: self.req.key.to_string(),
            })
            .await;
            return Ok(Attempt::Busy(Busy::poll()));
        }
        let Some(q) = &self.queued else {
            return Ok(Attempt::Busy(Busy::poll()));
        };
        match turn::predecessor(self.inner, &self.queue, q.rev, self.mode).await {
            Ok(Some(target)) => {
                let bounded = target.awaits_a_pass();
                let wake = turn::await_delete(self.inner.clone(), target, q.lease.clone());
                Ok(Attempt::Busy(if bounded {
                    // The pass is best effort: look again after a TTL at the latest
                    // (invariant E6).
                    Busy::woken_by(wake).or_at(Instant::now() + self.req.ttl)
                } else {
                    Busy::trusting(wake)
                }))
            }
            // Nobody ahead any more: look again at once.
            Ok(None) => Ok(Attempt::Busy(Busy::until(Instant::now()))),
            Err(e) if e.is_retryable() => Ok(Attempt::Transient(e)),
            Err(e) => Err(e),
        }
    }

    /// A timed-out or cancelled acquire deletes its entry.
    async fn give_up(&mut self, _: &LockError) {
        if let Some(q) = self.queued.take()
            && q.created
            && !delete_if(&self.inner.client, &self.name, q.rev).await
        {
            self.inner.holds.delete_later(self.name.clone(), q.rev);
        }
    }
}
