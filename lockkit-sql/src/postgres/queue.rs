//! The waiter queue: an exclusive acquire that waits is a row of
//! `<table>_waiters` ([`super::waiter_sql`]), and a release names the oldest live
//! one in its `NOTIFY` payload. Each driver's listener routes a payload
//! ([`Wakeups::route`]): the named waiter is woken, wherever it is, and no other
//! queued waiter, so a release behind 64 waiters sends one attempt, not 64.
//!
//! Polling stays the fallback: a named waiter that is gone without deleting its
//! row (its process died) holds the others to their polls (every 125–375 ms,
//! from the first: [`crate::wait::fallback_policy`]) until its row expires
//! ([`ROW_TTL`]); a waiter keeps its own row live while it waits. A waiter that
//! leaves while the key is free passes the wake-up on.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::driver::{Attempt, Contender, Contention, KeyWakers};
use lockkit_core::{AcquireRequest, Grant, LockError, OwnerId, Result, async_trait};
use sqlx::AssertSqlSafe;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::leases::{PgLeases, db_error, ttl_ms};
use super::take::Take;
use crate::connect::Within;
use crate::error::retry_conflicts;
use crate::lease::LeaseBackend;
use crate::wait::{Armed, failed};

/// Between the key and the named waiter in a release's payload: a control
/// character, which no key contains.
pub(super) const SEPARATOR: char = '\u{1f}';

/// How long a waiter's row stays live unless the waiter pushes it out, which it
/// does every half of this while it waits.
pub(super) const ROW_TTL: Duration = Duration::from_secs(10);

/// The wake-ups one listener feeds.
#[derive(Debug, Default)]
pub(super) struct Wakeups {
    /// Per key: observers, and waiters that are not queued (shared holds,
    /// permits, advisory mode). Every release of the key wakes them.
    pub(super) all: KeyWakers,
    /// Per key: the queued waiters, for a release that names none of them.
    queued: KeyWakers,
    /// Per queued waiter: for a release that names it.
    named: KeyWakers,
}

impl Wakeups {
    /// Wakes whoever a release's `payload` is for: the key's observers and
    /// unqueued waiters, and the waiter it names, or else all the key's queued
    /// waiters.
    pub(super) fn route(&self, payload: &str) {
        match payload.split_once(SEPARATOR) {
            Some((key, waiter)) => {
                self.all.wake(key);
                self.named.wake(waiter);
            }
            None => {
                self.all.wake(payload);
                self.queued.wake(payload);
            }
        }
    }

    /// Wakes the queued `waiter`, as a release that names it does.
    pub(super) fn wake_waiter(&self, waiter: &str) {
        self.named.wake(waiter);
    }

    /// Wakes every waiter and observer: releases may have gone unheard.
    pub(super) fn wake_all(&self) {
        self.all.wake_all();
        self.queued.wake_all();
        self.named.wake_all();
    }
}

/// The attempts of `req` (exclusive, willing to wait), queued in the key's
/// queue.
pub(super) fn contention<'a>(leases: &'a PgLeases, req: &'a AcquireRequest) -> Contention<'a> {
    // Only with a listener: every release wakes the waiter it names.
    let policy = crate::wait::fallback_policy(<PgLeases as LeaseBackend>::POLL_CAP);
    let queued = Queued {
        leases,
        req,
        place: None,
        row: Row::None,
    };
    Contention::new(queued).with_policy(policy)
}

/// One queued exclusive acquire.
struct Queued<'a> {
    leases: &'a PgLeases,
    req: &'a AcquireRequest,
    /// Ours once the first attempt was refused (an acquire granted at once
    /// pays nothing for the queue).
    place: Option<Place>,
    row: Row,
}

/// A waiter's id, and its wake-ups.
struct Place {
    /// Random, as an owner id is (shared: each attempt and the leave take it).
    waiter: Arc<str>,
    /// A release that names us.
    named: Arc<Notify>,
    /// A release that names no one.
    fallback: Arc<Notify>,
}

/// What we know of our row.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Row {
    /// Not written: we have not joined the queue, or our grant deleted it.
    None,
    /// Perhaps written: a join that failed, or is under way.
    Unknown,
    /// Written, live until `ROW_TTL` after this.
    Since(Instant),
}

impl Queued<'_> {
    /// Our place in the queue, made on first use.
    fn place(&mut self) -> &Place {
        let (wakeups, key) = (&self.leases.wakeups, self.req.key.as_str());
        self.place.get_or_insert_with(|| {
            let waiter: Arc<str> = OwnerId::new().to_hex().into();
            Place {
                named: wakeups.named.notify(&waiter),
                fallback: wakeups.queued.notify(key),
                waiter,
            }
        })
    }

    /// Joins the queue (which attempts again) until the row is written, then
    /// the queued attempt, after pushing the row's expiry out if half its life
    /// has gone.
    async fn attempt_queued(&mut self, waiter: &str) -> Result<Option<Grant>> {
        let before = self.row;
        let which = match before {
            Row::Since(at) => {
                if at.elapsed() >= ROW_TTL / 2 {
                    self.requeue(waiter).await?;
                    self.row = Row::Since(Instant::now());
                }
                Take::Queued(waiter)
            }
            Row::None | Row::Unknown => {
                self.row = Row::Unknown;
                Take::Join(waiter)
            }
        };
        let sent = Instant::now();
        let granted = self.leases.take(self.req, which).await?;
        match (&granted, before) {
            // The grant deleted our row (a join's, the row an earlier join that
            // failed may have written), or never wrote it.
            (Some(_), _) => self.row = Row::None,
            (None, Row::None | Row::Unknown) => self.row = Row::Since(sent),
            (None, Row::Since(_)) => {}
        }
        Ok(granted)
    }

    async fn requeue(&self, waiter: &str) -> Result<()> {
        retry_conflicts(|| {
            sqlx::query(AssertSqlSafe(self.leases.statements.requeue.clone()))
                .bind(self.req.key.as_str())
                .bind(waiter)
                .bind(ttl_ms(ROW_TTL))
                .execute(&self.leases.pool)
        })
        .within(self.leases.timeout)
        .await
        .map_err(db_error)?;
        Ok(())
    }

    /// The statement and parameters that delete our row, if we may have one.
    fn dequeue(&self) -> Option<Dequeue> {
        let place = self.place.as_ref().filter(|_| self.row != Row::None)?;
        Some(Dequeue {
            pool: self.leases.pool.clone(),
            statement: self.leases.statements.dequeue.clone(),
            key: self.req.key.as_str().to_owned(),
            waiter: place.waiter.clone(),
            channel: self.leases.statements.channel.clone(),
            timeout: self.leases.timeout,
        })
    }
}

#[async_trait]
impl Contender for Queued<'_> {
    /// The plain attempt first; if it is refused, at once, the queue.
    async fn attempt(&mut self) -> Result<Attempt> {
        if self.place.is_none() {
            match self.leases.take(self.req, Take::First).await {
                Ok(Some(grant)) => return Ok(Attempt::Granted(grant)),
                Ok(None) => {}
                Err(e) => return failed(e),
            }
        }
        let place = self.place();
        let waiter = place.waiter.clone();
        let armed = Armed::new([place.named.clone(), place.fallback.clone()]);
        Ok(match self.attempt_queued(&waiter).await {
            Ok(Some(grant)) => Attempt::Granted(grant),
            Ok(None) => Attempt::Busy(armed.busy()),
            Err(e) => return failed(e),
        })
    }

    /// Leaves the queue: the next release names the next waiter.
    async fn give_up(&mut self, _: &LockError) {
        if let Some(dequeue) = self.dequeue() {
            dequeue.run().await;
            // Not before: dropped during the delete, we delete again.
            self.row = Row::None;
        }
    }
}

/// A waiter dropped while queued (its acquire cancelled by its caller) leaves
/// the queue in the background.
impl Drop for Queued<'_> {
    fn drop(&mut self) {
        if let (Some(dequeue), Ok(runtime)) =
            (self.dequeue(), tokio::runtime::Handle::try_current())
        {
            runtime.spawn(dequeue.run());
        }
    }
}

/// Deletes one waiter's row ([`super::waiter_sql::dequeue`]).
struct Dequeue {
    pool: sqlx::PgPool,
    statement: Arc<str>,
    key: String,
    waiter: Arc<str>,
    /// Where releases are notified: the wake-up passes on from here.
    channel: String,
    timeout: Duration,
}

impl Dequeue {
    /// Best effort: a row left behind expires, and the next waiter to join,
    /// refresh or leave the key's queue sweeps it.
    async fn run(self) {
        let deleted = retry_conflicts(|| {
            sqlx::query(AssertSqlSafe(self.statement.clone()))
                .bind(&self.key)
                .bind(&*self.waiter)
                .bind(&self.channel)
                .execute(&self.pool)
        })
        .within(self.timeout)
        .await;
        if let Err(e) = deleted {
            tracing::debug!(error = %e, "leaving the waiter queue failed; the row will expire");
        }
    }
}

#[cfg(test)]
mod tests;
