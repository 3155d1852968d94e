//! [`GenericPlans`]: lockkit's own connections plan each statement once, by
//! its keys' indexes.
//!
//! PostgreSQL plans a prepared statement afresh for each of its first five
//! runs on a connection, and after that whenever the plan it would keep looks
//! dearer than one made for the values at hand. Planning lockkit's upserts
//! costs the server 100–550 µs, several times what running them costs. Behind
//! a queue of 64 waiters, each on its own connection, it planned every
//! statement it ran (pg_stat_statements: plans ≥ calls): over a third of the
//! server's busy time (`perf`). Every lockkit statement looks rows up by
//! key, so the kept (generic) plan is the plan: `plan_cache_mode =
//! force_generic_plan` makes the first run's plan the only one. A plan changes
//! how a statement runs, never what it does.
//!
//! A kept plan is made from the table statistics of its first run, and the
//! waiters table is empty most of the time: analyzed empty, it made the
//! acquire's queue check a scan of every key's waiters with, for each row,
//! another such scan (expecting no rows, the planner tested that condition
//! first), kept for the life of the connection however many waiters came
//! after: behind 20,000 other keys' waiters, one uncontended acquire took 20 s
//! (`EXPLAIN ANALYZE`). So sequential scans are off
//! too (`enable_seqscan = off`): a statement that can look its rows up by an
//! index always does, and one that cannot still scans
//! (`a_plan_made_on_empty_tables_still_finds_rows_by_key`).
//!
//! Both are session settings, so they are set only on connections that are
//! lockkit's alone: those of a pool lockkit opened, and only once it knows that
//! no transaction-mode pooler hands the session to other clients
//! ([`super::pooler`]), where the settings would stay behind for them. The
//! application's pool (`from_pool`) is left as it is. Through a session-mode
//! pooler, the pooler's `server_reset_query` (PgBouncer's default, `DISCARD
//! ALL`) clears them when lockkit disconnects.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use sqlx::AssertSqlSafe;
use sqlx::postgres::PgPoolOptions;

use crate::connect::ping_if_idle;
use crate::table::{Pooler, ServerSettings};

/// The settings, each run on its own: a server that refuses one (before
/// PostgreSQL 12, `plan_cache_mode`) still gets the other, and the connection
/// is used as it is.
const SET_UP: [&str; 2] = [
    "SET plan_cache_mode = force_generic_plan",
    "SET enable_seqscan = off",
];

/// Whether new connections of lockkit's own pool get the settings: from when
/// it was turned on.
#[derive(Debug, Default)]
pub(super) struct GenericPlans {
    since: Arc<OnceLock<Instant>>,
}

impl GenericPlans {
    /// On from the start when the URL says no pooler is between
    /// (`pooler=none`); otherwise off until [`on`](Self::on).
    pub(super) fn new(settings: &ServerSettings) -> Self {
        let plans = Self::default();
        if settings.pooler == Pooler::None {
            plans.on();
        }
        plans
    }

    /// `pool` with the settings run on each connection it opens once on (a
    /// connection that cannot take it is used as it is), and a connection
    /// opened before then closed instead of handed out (the table checks' and
    /// the pooler probe's), so that every connection lockkit runs its
    /// statements on has it.
    pub(super) fn set_up(&self, pool: PgPoolOptions) -> PgPoolOptions {
        let (at_connect, at_acquire) = (self.since.clone(), self.since.clone());
        pool.after_connect(move |conn, _| {
            let on = at_connect.get().is_some();
            Box::pin(async move {
                if on {
                    for setting in SET_UP {
                        if let Err(e) = sqlx::raw_sql(AssertSqlSafe(setting)).execute(&mut *conn).await {
                            tracing::debug!(error = %e, setting, "PostgreSQL: session setting not made");
                        }
                    }
                }
                Ok(())
            })
        })
        .before_acquire(move |conn, meta| {
            let opened = Instant::now().checked_sub(meta.age);
            let before = at_acquire
                .get()
                .is_some_and(|since| opened.is_none_or(|o| o < *since));
            Box::pin(async move {
                if before {
                    return Ok(false);
                }
                ping_if_idle(conn, meta).await
            })
        })
    }

    /// Turns the settings on, once connecting found that sessions are lockkit's
    /// own.
    pub(super) fn on(&self) {
        let _ = self.since.set(Instant::now());
    }
}
