//! The doorbell: how a MySQL/MariaDB release wakes a waiter in another process,
//! on the server's one blocking primitive, `GET_LOCK`.
//!
//! Every key has a bell, the user lock `SHA1('lockkit-wake:<db>.<table>:<key>')`.
//! A waiter blocks in `GET_LOCK(bell, t)` on a connection of its own; a holder
//! that waited for its lock keeps the bell it was woken with, and rings it by
//! `RELEASE_LOCK` when it releases: the server grants the bell to the waiter
//! that asked first, one waiter, no herd. That waiter attempts, keeps the bell
//! with its grant, and rings it in turn.
//!
//! A holder that took its lock without waiting has no bell (the uncontended path
//! costs nothing): the first waiter behind it gets the free bell at once, keeps
//! it, and polls (every 10 ms on average: one poller per key); the others queue behind that waiter in `GET_LOCK`. `t` is the
//! holder's lease left (a holder that stalls past it is taken over without a
//! ring), at most [`BELL_CAP`].
//!
//! Bells live on a pool of their own, [`BELL_CONNECTIONS`] per driver: one
//! connection per waiter while it waits, and per held lock that was waited for,
//! until its release. With the pool used up, further waiters poll.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockkit_core::{LockKey, OwnerId};
use sqlx::mysql::{MySql, MySqlPool, MySqlPoolOptions};
use sqlx::pool::PoolConnection;
use sqlx::{AssertSqlSafe, ConnectOptions};
use tokio::time::Instant;

use crate::connect::Within;

/// The longest a waiter blocks on a bell before it looks at the lock again.
pub(super) const BELL_CAP: Duration = Duration::from_secs(2);

/// Connections for bells, per driver.
pub(super) const BELL_CONNECTIONS: u32 = 8;

/// The bells of one driver: their connections, and the bells its holds keep.
#[derive(Debug)]
pub(super) struct Doorbells {
    pool: MySqlPool,
    /// What a wait on a bell runs.
    wait: WaitStatements,
    ring: Arc<str>,
    table: String,
    /// Each statement's limit (`request_timeout_ms`); a wait's is this past its
    /// own timeout.
    timeout: Duration,
    /// The bells this driver's holds keep, by key and owner.
    kept: Mutex<HashMap<(LockKey, OwnerId), Bell>>,
    /// How many: a release with none to ring takes no lock.
    kept_count: AtomicUsize,
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
}

impl Drop for Bell {
    fn drop(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            conn.close_on_drop();
        }
    }
}

/// What a wait on a bell came to.
#[derive(Debug)]
pub(super) enum Rung {
    /// The bell is ours: attempt, and keep it with the grant.
    Ours(Bell),
    /// Nobody rang in time: attempt again; `at_once` if the server did not
    /// block at all (the lock looked free or expired), so that the next pause
    /// is a poll's, not another wait on a bell that a waiter keeps.
    TimedOut { at_once: bool },
    /// The server answered at once or not at all, where it should have blocked:
    /// poll instead.
    Unusable,
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
            wait: WaitStatements {
                lease_left: lease_left_statement(table).into(),
                get_lock: format!("SELECT GET_LOCK({BELL}, ?)").into(),
                slack: timeout,
            },
            ring: format!("DO RELEASE_LOCK({BELL})").into(),
            table: table.to_owned(),
            timeout,
            kept: Mutex::default(),
            kept_count: AtomicUsize::new(0),
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
            name: format!("{}:{}", self.table, key.as_str()),
        })
    }

    /// The statements [`wait`] runs.
    pub(super) fn wait_statements(&self) -> WaitStatements {
        self.wait.clone()
    }

    /// Keeps `bell` with `owner`'s new hold of `key`, to ring at its release.
    pub(super) fn keep(&self, key: &LockKey, owner: &OwnerId, bell: Bell) {
        let old = lock(&self.kept).insert((key.clone(), owner.clone()), bell);
        if old.is_none() {
            self.kept_count.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Rings the bell kept with `owner`'s hold of `key`, if it has one: the first
    /// waiter gets it. A bell that cannot be rung is closed, which rings it too.
    pub(super) async fn ring(&self, key: &LockKey, owner: &OwnerId) {
        if self.kept_count.load(Ordering::Acquire) == 0 {
            return;
        }
        let Some(bell) = lock(&self.kept).remove(&(key.clone(), owner.clone())) else {
            return;
        };
        self.kept_count.fetch_sub(1, Ordering::AcqRel);
        ring(bell, &self.ring, self.timeout).await;
    }

    /// Rings a bell no hold kept (a waiter giving up).
    pub(super) async fn ring_unkept(&self, bell: Bell) {
        ring(bell, &self.ring, self.timeout).await;
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A bell's name from `'<table>:<key>'`: within `GET_LOCK`'s 64 characters, and
/// apart from other databases' tables of the same name.
const BELL: &str = "SHA1(CONCAT('lockkit-wake:', DATABASE(), '.', ?))";

/// What a wait on a bell runs, in two requests: the holder's lease left, then
/// `GET_LOCK` for that long. Apart, so that the server has nothing left to do
/// for the waiter once the bell is rung but answer: a `GET_LOCK` inside a larger
/// statement finished it after the wake-up, on the hand-off's path (about 20 µs
/// of a MariaDB hand-off).
#[derive(Debug, Clone)]
pub(super) struct WaitStatements {
    lease_left: Arc<str>,
    /// `GET_LOCK` on the bell of `'<table>:<key>'` (bound first), for the time
    /// bound second, in seconds.
    get_lock: Arc<str>,
    /// The time a statement may take past its own timeout before the connection
    /// is given up for dead.
    slack: Duration,
}

/// The longest to wait on a bell, in seconds: at most the cap (bound first), and
/// the lease left of the key (bound second): none if the lock is free or expired.
fn lease_left_statement(table: &str) -> String {
    format!(
        "SELECT LEAST(?, GREATEST(0, COALESCE((\
             SELECT TIMESTAMPDIFF(MICROSECOND, NOW(6), expires_at) FROM `{table}` \
             WHERE name = ? AND owner IS NOT NULL), 0)) / 1000000) + 0e0"
    )
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

/// Waits on `bell`'s bell for at most `cap` (and the holder's lease left); a
/// server that has not answered `statements.slack` after that is taken for gone.
pub(super) async fn wait(
    mut bell: Bell,
    statements: WaitStatements,
    key: LockKey,
    cap: Duration,
) -> Rung {
    let Some(conn) = bell.conn.as_mut() else {
        return Rung::Unusable;
    };
    let asked = sqlx::query_scalar::<_, f64>(AssertSqlSafe(statements.lease_left))
        .bind(cap.as_secs_f64())
        .bind(key.as_str())
        .fetch_one(&mut **conn)
        .within(statements.slack)
        .await;
    let Ok(asked) = asked else {
        return Rung::Unusable;
    };
    let started = Instant::now();
    let got = sqlx::query_scalar::<_, Option<i64>>(AssertSqlSafe(statements.get_lock))
        .bind(&bell.name)
        .bind(asked)
        .fetch_one(&mut **conn)
        .within(cap + statements.slack)
        .await;
    let waited = started.elapsed();
    match got {
        Ok(Some(1)) => Rung::Ours(bell),
        Ok(Some(_)) => {
            // Timed out: the connection holds nothing, and goes back to the pool.
            drop(bell.conn.take());
            // A server that does not take fractional timeouts answers 0 at once.
            if asked >= 0.1 && waited.as_secs_f64() < asked / 2.0 {
                return Rung::Unusable;
            }
            Rung::TimedOut {
                at_once: waited < Duration::from_millis(10),
            }
        }
        Ok(None) | Err(_) => Rung::Unusable,
    }
}
