//! [`GenericPlans`]: lockkit's own connections plan each statement once.
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
//! It is a session setting, so it is set only on connections that are
//! lockkit's alone: those of a pool lockkit opened, and only once it knows that
//! no transaction-mode pooler hands the session to other clients
//! ([`super::pooler`]), where the setting would stay behind for them. The
//! application's pool (`from_pool`) is left as it is. Through a session-mode
//! pooler, the pooler's `server_reset_query` (PgBouncer's default, `DISCARD
//! ALL`) clears it when lockkit disconnects.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use sqlx::AssertSqlSafe;
use sqlx::postgres::PgPoolOptions;

use crate::connect::ping_if_idle;
use crate::table::{Pooler, ServerSettings};

/// The setting (PostgreSQL 12 and later; an older server refuses it, and the
/// connection is used as it is).
const SET_UP: &str = "SET plan_cache_mode = force_generic_plan";

/// Whether new connections of lockkit's own pool get the setting: from when
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

    /// `pool` with the setting run on each connection it opens once on (a
    /// connection that cannot take it is used as it is), and a connection
    /// opened before then closed instead of handed out (the table checks' and
    /// the pooler probe's), so that every connection lockkit runs its
    /// statements on has it.
    pub(super) fn set_up(&self, pool: PgPoolOptions) -> PgPoolOptions {
        let (at_connect, at_acquire) = (self.since.clone(), self.since.clone());
        pool.after_connect(move |conn, _| {
            let on = at_connect.get().is_some();
            Box::pin(async move {
                if on && let Err(e) = sqlx::raw_sql(AssertSqlSafe(SET_UP)).execute(conn).await {
                    tracing::debug!(error = %e, "PostgreSQL: plan_cache_mode not set");
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

    /// Turns the setting on, once connecting found that sessions are lockkit's
    /// own.
    pub(super) fn on(&self) {
        let _ = self.since.set(Instant::now());
    }
}
