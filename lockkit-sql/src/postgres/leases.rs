//! [`PgLeases`]: PostgreSQL's side of [`super::PgDriver`] — the statements each
//! lease operation runs, and the wake-up its listener feeds.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::driver::Contention;
use lockkit_core::driver::{KeyWakers, LockMode};
use lockkit_core::{
    AcquireRequest, Capabilities, Grant, Inspection, LockError, LockKey, OwnerId, Renewal, Result,
    WakeUp, async_trait,
};
use sqlx::Row;
use sqlx::postgres::{PgPool, Postgres};

use super::listen::Listener;
use super::queue::{self, Wakeups};
use super::take::Take;
use super::watched::{WATCH_TTL, Watched};
use super::wire::{Value, Wire};
use super::{holder_sql, sql, waiter_sql};
use crate::connect::Within;
use crate::error::retry_conflicts;
use crate::holds::{HolderRow, KeyRow};
use crate::lease::{LeaseBackend, QUEUED_LEASE_CAPABILITIES};
use crate::warm::Warm;
use crate::{mode_names, renew, turns};

pub(crate) const NAME: &str = "postgres";

pub(super) fn db_error(e: sqlx::Error) -> LockError {
    crate::error::db_error(NAME, e)
}

pub(super) fn ttl_ms(ttl: Duration) -> f64 {
    ttl.as_secs_f64() * 1000.0
}

/// PostgreSQL's side of [`super::PgDriver`]: its pool, statements and listener.
#[derive(Debug)]
pub struct PgLeases {
    pub(super) pool: PgPool,
    /// The lease statements' connections, kept between statements.
    pub(super) warm: Warm<Postgres>,
    pub(super) statements: Statements,
    pub(super) wakeups: Arc<Wakeups>,
    /// None behind a transaction-mode pooler, where `LISTEN` hears nothing:
    /// waiters poll.
    listener: Option<Listener>,
    /// How statements reach the server.
    pub(super) wire: Wire,
    /// Each statement (`request_timeout_ms`).
    pub(super) timeout: Duration,
    /// The keys this driver's observers watch.
    watched: Watched,
}

/// Every statement, built once per driver.
#[derive(Debug)]
pub(super) struct Statements {
    pub(super) acquire: Arc<str>,
    pub(super) acquire_if_free: Arc<str>,
    pub(super) join_queue: Arc<str>,
    pub(super) acquire_queued: Arc<str>,
    pub(super) requeue: Arc<str>,
    pub(super) dequeue: Arc<str>,
    enqueue_polling: Arc<str>,
    leave_polling: Arc<str>,
    watch: Arc<str>,
    pub(super) live_queue: Arc<str>,
    count_waiters: Arc<str>,
    pub(super) extend: Arc<str>,
    proclaim: Arc<str>,
    list: Arc<str>,
    extend_many: Arc<str>,
    pub(super) release: Arc<str>,
    pub(super) force_release: Arc<str>,
    purge: Arc<str>,
    pub(super) lock_key: Arc<str>,
    pub(super) live_holders: Arc<str>,
    pub(super) grant: Arc<str>,
    pub(super) release_holder: Arc<str>,
    pub(super) inspect: Arc<str>,
    pub(super) channel: String,
}

impl PgLeases {
    /// Statements on `table`, releases notified on `channel`, waiters woken by
    /// `wakeups` (which `listener` feeds). Connections are kept warm between
    /// statements if lockkit made the `pool` (`own`).
    pub(super) fn new(
        pool: PgPool,
        own: bool,
        table: &str,
        channel: String,
        wakeups: Arc<Wakeups>,
        listener: Option<Listener>,
        timeout: Duration,
    ) -> Self {
        Self {
            warm: Warm::new(pool.clone(), own),
            pool,
            statements: Statements {
                acquire: sql::acquire(table).into(),
                acquire_if_free: sql::acquire_if_free(table, "$2", "$5").into(),
                join_queue: waiter_sql::join_queue(table).into(),
                acquire_queued: waiter_sql::acquire_queued(table).into(),
                requeue: waiter_sql::requeue(table).into(),
                dequeue: waiter_sql::dequeue(table).into(),
                enqueue_polling: waiter_sql::enqueue(table).into(),
                leave_polling: waiter_sql::leave(table).into(),
                watch: waiter_sql::watch(table).into(),
                live_queue: waiter_sql::live_queue(table).into(),
                count_waiters: waiter_sql::count_waiters(table).into(),
                extend: sql::extend(table).into(),
                proclaim: sql::proclaim(table).into(),
                list: sql::list(table).into(),
                extend_many: sql::extend_many(table).into(),
                release: sql::release(table).into(),
                force_release: sql::force_release(table).into(),
                purge: sql::purge(table).into(),
                lock_key: holder_sql::lock_key(table).into(),
                live_holders: holder_sql::live_holders(table).into(),
                grant: holder_sql::grant(table).into(),
                release_holder: holder_sql::release_holder(table).into(),
                inspect: holder_sql::inspect(table).into(),
                channel,
            },
            wakeups,
            wire: if listener.is_some() {
                Wire::Prepared
            } else {
                Wire::Simple
            },
            listener,
            timeout,
            watched: Watched::default(),
        }
    }
}

#[async_trait]
impl LeaseBackend for PgLeases {
    const NAME: &'static str = NAME;
    /// No NOTIFY arrived (a lost one, a broken listener): poll.
    const POLL_CAP: Duration = Duration::from_millis(250);
    const BATCH_RENEWALS: bool = true;
    const WAKE_ON_RELEASE: bool = false;
    const QUEUES: bool = true;

    fn capabilities(&self) -> Capabilities {
        let notified = self.listener.is_some();
        QUEUED_LEASE_CAPABILITIES
            .with_wake_up(if notified {
                WakeUp::Notify
            } else {
                WakeUp::Poll
            })
            .with_watch(notified)
    }

    async fn try_acquire_all(&self, reqs: &[AcquireRequest]) -> Result<Option<Vec<Grant>>> {
        self.take_all(reqs).await
    }

    /// A polling waiter (shared, permit, or any behind a pooler) joins the
    /// queue under its owner id; an exclusive waiter with a listener has a row
    /// of its own ([`queue`]). If a release passed it by unnotified (the key is
    /// free now), the key's waiters attempt again at once.
    async fn enqueue(&self, req: &AcquireRequest) -> Result<()> {
        let owner = req.owner.to_hex();
        let values = [
            Value::Text(req.key.as_str()),
            Value::Text(&owner),
            Value::Float(ttl_ms(turns::LIFETIME)),
            Value::Text(mode_names::mode_name(req.mode)),
        ];
        let free: bool = retry_conflicts(|| {
            self.wire
                .scalar(&self.warm, &self.statements.enqueue_polling, &values)
        })
        .within(self.timeout)
        .await
        .map_err(db_error)?;
        if free {
            self.wakeups.all.wake(req.key.as_str());
        }
        Ok(())
    }

    async fn dequeue(&self, req: &AcquireRequest) -> Result<()> {
        let owner = req.owner.to_hex();
        let values = [Value::Text(req.key.as_str()), Value::Text(&owner)];
        self.wire
            .rows(&self.warm, &self.statements.leave_polling, &values)
            .within(self.timeout)
            .await
            .map(drop)
            .map_err(db_error)
    }

    fn notified(&self) -> bool {
        self.listener.is_some()
    }

    /// Pushes the key's `wake_until` out ([`super::watched`]), when due.
    async fn watching(&self, key: &LockKey) -> Result<()> {
        if self.listener.is_none() || !self.watched.due(key.as_str()) {
            return Ok(());
        }
        let sent = tokio::time::Instant::now();
        let values = [Value::Text(key.as_str()), Value::Float(ttl_ms(WATCH_TTL))];
        retry_conflicts(|| self.wire.rows(&self.warm, &self.statements.watch, &values))
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        self.watched.pushed(key.as_str(), sent);
        Ok(())
    }

    fn wakers(&self) -> &KeyWakers {
        if let Some(listener) = &self.listener {
            listener.keep_running();
        }
        &self.wakeups.all
    }

    /// An exclusive acquire that waits joins the key's queue ([`queue`]);
    /// behind a transaction-mode pooler, where no release is heard, it polls.
    fn contend_exclusive<'a>(&'a self, req: &'a AcquireRequest) -> Contention<'a> {
        let Some(listener) = &self.listener else {
            return crate::lease::polling(self, req);
        };
        listener.keep_running();
        queue::contention(self, req)
    }

    async fn try_acquire(&self, req: &AcquireRequest) -> Result<Option<Grant>> {
        if req.mode != LockMode::Exclusive {
            return self.try_acquire_many(req).await;
        }
        self.take(req, Take::First).await
    }

    /// A waiter's next exclusive attempt looks before it locks
    /// ([`sql::acquire_if_free`]): a refused attempt then costs the server no row
    /// lock and no transaction id.
    async fn try_acquire_again(&self, req: &AcquireRequest) -> Result<Option<Grant>> {
        if req.mode != LockMode::Exclusive {
            if self.looks_full(req).await? {
                return Ok(None);
            }
            return self.try_acquire_many(req).await;
        }
        self.take(req, Take::Again).await
    }

    async fn read_holds(&self, key: &LockKey) -> Result<(Option<KeyRow>, Vec<HolderRow>)> {
        self.read_rows(key).await
    }

    async fn inspect(&self, key: &LockKey) -> Result<Inspection> {
        let (row, many) = self.read_rows(key).await?;
        let waiting: i64 = self
            .wire
            .scalar(
                &self.warm,
                &self.statements.count_waiters,
                &[Value::Text(key.as_str())],
            )
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        let inspection = crate::holds::inspection(key, row.as_ref(), &many);
        Ok(inspection.with_waiters(usize::try_from(waiting).unwrap_or(0)))
    }

    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<bool> {
        let owner = owner.to_hex();
        let values = [
            Value::Text(key.as_str()),
            Value::Text(&owner),
            Value::Float(ttl_ms(ttl)),
        ];
        let renewed: i64 = retry_conflicts(|| {
            self.wire
                .scalar(&self.warm, &self.statements.extend, &values)
        })
        .within(self.timeout)
        .await
        .map_err(db_error)?;
        Ok(renewed > 0)
    }

    async fn proclaim(&self, key: &LockKey, owner: &OwnerId, text: &str) -> Result<bool> {
        let owner = owner.to_hex();
        let values = [
            Value::Text(key.as_str()),
            Value::Text(&owner),
            Value::Text(text),
        ];
        let stored: i64 = retry_conflicts(|| {
            self.wire
                .scalar(&self.warm, &self.statements.proclaim, &values)
        })
        .within(self.timeout)
        .await
        .map_err(db_error)?;
        Ok(stored > 0)
    }

    async fn list(&self, prefix: &str, limit: usize) -> Result<Vec<String>> {
        let values = [
            Value::Int(i64::try_from(prefix.chars().count()).unwrap_or(i64::MAX)),
            Value::Text(prefix),
            Value::Int(i64::try_from(limit).unwrap_or(i64::MAX)),
        ];
        let rows = retry_conflicts(|| self.wire.rows(&self.warm, &self.statements.list, &values))
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        rows.iter()
            .map(|r| r.try_get(0))
            .collect::<Result<_, _>>()
            .map_err(db_error)
    }

    async fn extend_batch(&self, ttl: Duration, batch: &[Renewal]) -> Result<Vec<bool>> {
        let names: Vec<&str> = batch.iter().map(|r| r.key.as_str()).collect();
        let owners: Vec<String> = batch.iter().map(|r| r.owner.to_hex()).collect();
        let values = [
            Value::Float(ttl_ms(ttl)),
            Value::Texts(names),
            Value::Texts(owners.iter().map(String::as_str).collect()),
        ];
        let rows = retry_conflicts(|| {
            self.wire
                .rows(&self.warm, &self.statements.extend_many, &values)
        })
        .within(self.timeout)
        .await
        .map_err(db_error)?;
        let rows = rows
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect::<Result<Vec<(String, String)>, sqlx::Error>>()
            .map_err(db_error)?;
        Ok(renew::renewed_flags(batch, rows))
    }

    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        let hex = owner.to_hex();
        let values = [
            Value::Text(key.as_str()),
            Value::Text(&hex),
            Value::Text(&self.statements.channel),
        ];
        let freed =
            retry_conflicts(|| self.wire.row(&self.warm, &self.statements.release, &values))
                .within(self.timeout)
                .await
                .map_err(db_error)?
                .is_some();
        Ok(freed || self.release_holder(key, owner).await?)
    }

    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        self.force_release_all(key).await
    }

    async fn purge(&self, key: &LockKey) -> Result<()> {
        self.watched.forget(key.as_str());
        let key_only = [Value::Text(key.as_str())];
        retry_conflicts(|| {
            self.wire
                .rows(&self.warm, &self.statements.purge, &key_only)
        })
        .within(self.timeout)
        .await
        .map_err(db_error)?;
        Ok(())
    }
}
