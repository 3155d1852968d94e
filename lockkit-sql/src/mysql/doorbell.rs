//! The doorbell: how a MySQL/MariaDB release wakes a waiter in another process,
//! on the server's one blocking primitive, `GET_LOCK`.
//!
//! Every key has a bell, the user lock `SHA1('lockkit-wake:<db>.<table>:<key>')`.
//! A waiter blocks in `GET_LOCK(bell, t)` on a connection of its own; a holder
//! that waited for its lock keeps the bell it was woken with, and rings it by
//! `RELEASE_LOCK` when it releases: the server grants the bell to the waiter
//! that asked first, one waiter, no herd. That waiter attempts, keeps the bell
//! with its grant, and rings it in turn. A waiter that a release woke expects
//! the key free: its attempt is a plain `UPDATE` of the free row
//! ([`super::sql::take_free`]), and the whole upsert only if that took nothing.
//!
//! A holder that took its lock without waiting has no bell (the uncontended path
//! costs nothing): the first waiter behind it gets the free bell at once, keeps
//! it, and *sleeps* on its connection ([`super::first_in_line`]); the others queue
//! behind that waiter in `GET_LOCK`. The sleeper marks the key's row with its
//! connection id first; an exclusive release reads (and clears) the mark in its
//! own statement, returned by `LAST_INSERT_ID`, and only if it was there asks
//! who holds the bell (`IS_USED_LOCK`, in a `SELECT`: in a statement that
//! writes it would be unsafe for statement-based binary logging, invariant
//! M5); a shared, permit or forced release that left the key free asks always.
//! A releaser without a bell of its own to ring ends that sleep with
//! `KILL QUERY` ([`wake`]), on the connection that read the id, so that it
//! reaches the server whose lock table named it: the waiter first in line wakes
//! at once. The sleep also ends when the holder's lease does, and after 250 ms
//! at most, for a release that woke no one (a client other than lockkit, a
//! wake-up refused). `t` is the holder's lease left (a holder that stalls past
//! it is taken over without a ring), at most [`BELL_CAP`].
//!
//! What the wake-up needs, and what it cannot rule out:
//! - `KILL QUERY` of another session needs the same database user (or MariaDB's
//!   `CONNECTION ADMIN`, MySQL's `CONNECTION_ADMIN`, `SUPER` before them): a
//!   releaser that may not kill leaves the waiter to its sleep's end.
//! - The id names the bell's holder at that instant. A wake-up that arrives
//!   late lands on whatever that bell connection runs next: the waiter's own
//!   attempt (rolled back, and made again) or, once the connection is back in
//!   the bell pool, another waiter's wait on a bell (it polls once, then waits
//!   again). It never reaches a connection outside lockkit's bell pools.
//! - Behind a proxy that sends one client connection's statements to different
//!   servers, or that rewrites `KILL` (ProxySQL, MaxScale, a balancer over
//!   several primaries), neither the bells nor the wake-up hold: connect to the
//!   server itself.
//!
//! Bells live on a pool of their own, [`BELL_CONNECTIONS`] per driver: one
//! connection per waiter while it waits, and per held lock that was waited for,
//! until its release. With the pool used up, further waiters poll.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::holds::HoldTable;
use lockkit_core::{LockKey, OwnerId};
use sqlx::mysql::{MySql, MySqlConnection, MySqlPool, MySqlPoolOptions};
use sqlx::pool::PoolConnection;
use sqlx::{AssertSqlSafe, ConnectOptions};

use super::bell_wait::WaitStatements;
use crate::connect::Within;

/// The longest a waiter blocks on a bell before it looks at the lock again.
pub(super) const BELL_CAP: Duration = Duration::from_secs(2);

/// Connections for bells, per driver.
pub(super) const BELL_CONNECTIONS: u32 = 8;

/// The bells of one driver: their connections, and the bells its holds keep.
#[derive(Debug)]
pub(super) struct Doorbells {
    pool: MySqlPool,
    /// What a wait on a bell and the first in line's sleep run, and each
    /// statement's limit.
    wait: WaitStatements,
    ring: Arc<str>,
    /// Who holds a free key's bell: see [`Doorbells::wake_first_in_line`].
    bell_holder: Arc<str>,
    table: String,
    /// The bells this driver's holds keep, by key and owner (a release with
    /// none to ring takes no lock).
    kept: HoldTable<Bell>,
}

/// A connection that holds, or waits for, one bell. Dropped without being rung
/// (a cancelled wait, a driver gone), it is closed: the server frees the bell.
#[derive(Debug)]
pub(super) struct Bell {
    conn: Option<PoolConnection<MySql>>,
    name: String,
}

impl Bell {
    /// The connection, to attempt on.
    pub(super) fn connection(&mut self) -> Option<&mut sqlx::mysql::MySqlConnection> {
        self.conn.as_deref_mut()
    }

    /// The text the bell's name is made of ([`Doorbells::bell_name`]).
    pub(super) fn name(&self) -> &str {
        &self.name
    }

    /// The connection, which holds no bell: back to the pool when dropped.
    pub(super) fn release_connection(&mut self) -> Option<PoolConnection<MySql>> {
        self.conn.take()
    }
}

impl Drop for Bell {
    fn drop(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            conn.close_on_drop();
        }
    }
}

impl Doorbells {
    /// Bells for the lease table `table`, on connections like `pool`'s.
    pub(super) fn new(pool: &MySqlPool, table: &str, timeout: Duration) -> Self {
        // A wait on a bell lasts up to `BELL_CAP` by design: not a slow
        // statement (sqlx's default threshold, 1 s, would warn of every wait).
        let options = (*pool.connect_options())
            .clone()
            .log_slow_statements(log::LevelFilter::Warn, BELL_CAP + timeout);
        let bells = MySqlPoolOptions::new()
            .max_connections(BELL_CONNECTIONS)
            .min_connections(0)
            .acquire_timeout(timeout)
            .test_before_acquire(false)
            .connect_lazy_with(options);
        Self {
            pool: bells,
            wait: WaitStatements::new(table, timeout),
            ring: format!("DO RELEASE_LOCK({BELL})").into(),
            bell_holder: format!(
                "SELECT CAST(COALESCE(IS_USED_LOCK({BELL}), 0) AS UNSIGNED) FROM `{table}` \
                 WHERE name = ? AND (owner IS NULL OR expires_at <= UTC_TIMESTAMP(6))"
            )
            .into(),
            table: table.to_owned(),
            kept: HoldTable::new(),
        }
    }

    /// The text a bell's name is made of: `'<table>:<key>'`.
    pub(super) fn bell_name(&self, key: &LockKey) -> String {
        format!("{}:{}", self.table, key.as_str())
    }

    /// Wakes the waiter first in line on `key`'s bell, if the key is free and
    /// someone holds its bell: after a release that had no bell of its own to
    /// ring (any mode's, a forced one). On `conn`, as [`wake`] wants.
    pub(super) async fn wake_first_in_line(&self, conn: &mut MySqlConnection, key: &LockKey) {
        let holder = sqlx::query_scalar::<_, u64>(AssertSqlSafe(self.bell_holder.clone()))
            .bind(self.bell_name(key))
            .bind(key.as_str())
            .fetch_optional(&mut *conn)
            .within(self.wait.timeout)
            .await;
        match holder {
            Ok(Some(holder)) if holder > 0 => wake(conn, holder, self.wait.timeout).await,
            Ok(_) => {}
            Err(e) => tracing::debug!(error = %e, "MySQL doorbell: no bell holder to wake"),
        }
    }

    /// A connection to wait on `key`'s bell with, unless all are in use.
    pub(super) async fn connection(&self, key: &LockKey) -> Option<Bell> {
        if self.pool.num_idle() == 0 && self.pool.size() >= BELL_CONNECTIONS {
            return None;
        }
        let conn = self.pool.acquire().await.ok()?;
        Some(Bell {
            conn: Some(conn),
            name: self.bell_name(key),
        })
    }

    /// The statements [`super::bell_wait::wait`] and [`super::first_in_line::sleep`] run.
    pub(super) fn wait_statements(&self) -> WaitStatements {
        self.wait.clone()
    }

    /// Keeps `bell` with `owner`'s new hold of `key`, to ring at its release.
    pub(super) fn keep(&self, key: &LockKey, owner: &OwnerId, bell: Bell) {
        self.kept.insert(key.clone(), owner.clone(), bell);
    }

    /// Takes the bell kept with `owner`'s hold of `key`, if it has one: to ring
    /// once the hold is gone ([`ring_unkept`](Self::ring_unkept)).
    pub(super) fn take_kept(&self, key: &LockKey, owner: &OwnerId) -> Option<Bell> {
        self.kept.remove(key, owner)
    }

    /// Rings the bell kept with `owner`'s hold of `key`, if it has one: the first
    /// waiter gets it. A bell that cannot be rung is closed, which rings it too.
    pub(super) async fn ring(&self, key: &LockKey, owner: &OwnerId) {
        if let Some(bell) = self.take_kept(key, owner) {
            self.ring_unkept(bell).await;
        }
    }

    /// Rings a bell no hold keeps (any more): a waiter giving up, a released hold.
    pub(super) async fn ring_unkept(&self, bell: Bell) {
        ring(bell, &self.ring, self.wait.timeout).await;
    }
}

/// A bell's name from `'<table>:<key>'`: within `GET_LOCK`'s 64 characters, and
/// apart from other databases' tables of the same name. `DATABASE()` is
/// utf8mb3: converted, so that a key holding a character utf8mb3 lacks (an
/// emoji) does not make the `CONCAT` fail (invariant M6); the name of any other
/// key is the same as before.
pub(super) const BELL: &str =
    "SHA1(CONCAT('lockkit-wake:', CONVERT(DATABASE() USING utf8mb4), '.', ?))";

/// Wakes the waiter first in line on a bell, whose connection is `holder`: ends
/// its [`super::first_in_line::sleep`] (`KILL QUERY`). Sent on `conn`, the connection
/// that just read `holder` from the server's lock table, so that it reaches the
/// same server. Best effort: a connection that is gone or not ours to kill
/// (another database user) is left to its sleep's end.
async fn wake(conn: &mut MySqlConnection, holder: u64, limit: Duration) {
    let kill = sqlx::raw_sql(AssertSqlSafe(format!("KILL QUERY {holder}")))
        .execute(conn)
        .within(limit)
        .await;
    if let Err(e) = kill {
        tracing::debug!(error = %e, "MySQL doorbell: could not wake the first in line");
    }
}

async fn ring(mut bell: Bell, statement: &Arc<str>, limit: Duration) {
    let Some(conn) = bell.conn.as_mut() else {
        return;
    };
    let rung = sqlx::query(AssertSqlSafe(statement.clone()))
        .bind(&bell.name)
        .execute(&mut **conn)
        .within(limit)
        .await;
    match rung {
        // Rung: the connection holds no bell now, and goes back to the pool.
        Ok(_) => drop(bell.conn.take()),
        Err(e) => tracing::debug!(error = %e, "MySQL doorbell: closing it instead"),
    }
}
