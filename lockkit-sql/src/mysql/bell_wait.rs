//! A waiter's wait on a key's bell ([`super::doorbell`]): `GET_LOCK` on the
//! bell, for at most the holder's lease left.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::LockKey;
use sqlx::AssertSqlSafe;
use tokio::time::Instant;

use super::doorbell::{BELL, Bell};
use crate::connect::Within;
use crate::error::is_interrupted;

/// A wait on a bell that answered sooner than this did not block: the bell was
/// free, or the server did not wait.
const AT_ONCE: Duration = Duration::from_millis(10);

/// What a wait on a bell came to.
#[derive(Debug)]
pub(super) enum Rung {
    /// The bell is ours: attempt, and keep it with the grant. `rung` if the
    /// key was held when the wait began and the server blocked (at least
    /// [`AT_ONCE`]): the bell came by a release's ring, or from a waiter that
    /// left, so the key is most likely free. A bell that was free at once (the
    /// first in line, behind a holder without one) is not rung.
    Ours { bell: Bell, rung: bool },
    /// Nobody rang in time: attempt again; `at_once` if the server did not
    /// block at all (the lock looked free or expired), so that the next pause
    /// is a poll's, not another wait on a bell that a waiter keeps.
    TimedOut { at_once: bool },
    /// The server answered at once or not at all, where it should have blocked:
    /// poll instead.
    Unusable,
}

/// What a wait on a bell runs, in two requests: the holder's lease left, then
/// `GET_LOCK` for that long. Apart, so that the server has nothing left to do
/// for the waiter once the bell is rung but answer: a `GET_LOCK` inside a larger
/// statement finished it after the wake-up, on the hand-off's path (about 20 µs
/// of a MariaDB hand-off). The first in line runs `sleep` instead.
#[derive(Debug, Clone)]
pub(super) struct WaitStatements {
    lease_left: Arc<str>,
    /// `GET_LOCK` on the bell of `'<table>:<key>'` (bound first), for the time
    /// bound second, in seconds.
    get_lock: Arc<str>,
    /// The first in line's mark and wait: see [`super::first_in_line`].
    pub(super) mark: Arc<str>,
    pub(super) sleep: Arc<str>,
    /// Each statement's limit (`request_timeout_ms`). A wait's is this past its
    /// own end: after that, its connection is given up for dead.
    pub(super) timeout: Duration,
}

impl WaitStatements {
    /// The statements for the lease table `table`, each bounded by `timeout`.
    pub(super) fn new(table: &str, timeout: Duration) -> Self {
        Self {
            lease_left: lease_left_statement(table).into(),
            get_lock: format!("SELECT GET_LOCK({BELL}, ?)").into(),
            mark: super::first_in_line::mark_statement(table).into(),
            sleep: super::first_in_line::sleep_statement(table).into(),
            timeout,
        }
    }
}

/// The longest to wait on a bell, in seconds: at most the cap (bound first), and
/// the lease left of the key (bound second): none if the lock is free or expired.
fn lease_left_statement(table: &str) -> String {
    format!(
        "SELECT LEAST(?, GREATEST(0, COALESCE((\
             SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) FROM `{table}` \
             WHERE name = ? AND owner IS NOT NULL), 0)) / 1000000) + 0e0"
    )
}

/// Waits on `bell`'s bell for at most `cap` (and the holder's lease left); a
/// server that has not answered `statements.timeout` after that is taken for gone.
pub(super) async fn wait(
    mut bell: Bell,
    statements: WaitStatements,
    key: LockKey,
    cap: Duration,
) -> Rung {
    let name = bell.name().to_owned();
    let Some(conn) = bell.connection() else {
        return Rung::Unusable;
    };
    let asked = sqlx::query_scalar::<_, f64>(AssertSqlSafe(statements.lease_left))
        .bind(cap.as_secs_f64())
        .bind(key.as_str())
        .fetch_one(&mut *conn)
        .within(statements.timeout)
        .await;
    let asked = match asked {
        Ok(asked) => asked,
        Err(e) if is_interrupted(&e) => return woken_late(bell),
        Err(_) => return Rung::Unusable,
    };
    let started = Instant::now();
    let got = sqlx::query_scalar::<_, Option<i64>>(AssertSqlSafe(statements.get_lock))
        .bind(name)
        .bind(asked)
        .fetch_one(&mut *conn)
        .within(cap + statements.timeout)
        .await;
    let waited = started.elapsed();
    match got {
        Ok(Some(1)) => Rung::Ours {
            bell,
            rung: asked > 0.0 && waited >= AT_ONCE,
        },
        Ok(Some(_)) => {
            // Timed out: the connection holds nothing, and goes back to the pool.
            drop(bell.release_connection());
            // A server that does not take fractional timeouts answers 0 at once.
            if asked >= 0.1 && waited.as_secs_f64() < asked / 2.0 {
                return Rung::Unusable;
            }
            Rung::TimedOut {
                at_once: waited < AT_ONCE,
            }
        }
        // `GET_LOCK` fails, or answers NULL, when the wake-up lands on it.
        Err(e) if is_interrupted(&e) => woken_late(bell),
        Ok(None) if waited < cap => woken_late(bell),
        Ok(None) | Err(_) => Rung::Unusable,
    }
}

/// A wake-up meant for the bell's last holder landed on this wait, late: the
/// connection is fine, holds nothing, and goes back to the pool; poll once, then
/// wait on the bell again.
fn woken_late(mut bell: Bell) -> Rung {
    drop(bell.release_connection());
    Rung::TimedOut { at_once: true }
}
