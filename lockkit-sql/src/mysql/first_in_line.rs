//! The waiter first in line on a key's bell, behind a holder that has no bell to
//! ring (it took its lock without waiting): it marks the key's row with its
//! connection's id and sleeps on the bell's connection, and the release, which
//! finds the mark and asks who holds the bell, wakes it by ending that sleep (`KILL QUERY`, see
//! [`super::doorbell::wake`]).

use std::time::Duration;

use lockkit_core::LockKey;
use sqlx::AssertSqlSafe;

use super::bell_wait::WaitStatements;
use super::doorbell::Bell;
use crate::connect::Within;
use crate::error::is_interrupted;

/// Before it sleeps, the first in line marks the key's row with its
/// connection's id (`sleeper`), unless the mark is there already: the release
/// statement reads it ([`super::sql::release`]) and then wakes whoever holds
/// the key's bell; the release and a grant clear it. Only while the key is held and live. Binds: name.
pub(super) fn mark_statement(table: &str) -> String {
    format!(
        "UPDATE `{table}` SET sleeper = CONNECTION_ID()
         WHERE name = ? AND owner IS NOT NULL AND expires_at > UTC_TIMESTAMP(6)
           AND NOT (sleeper <=> CONNECTION_ID())"
    )
}

/// The first in line's wait: while the key is held and live, sleep until the
/// holder's lease ends, for at most the time bound first. One statement, so that
/// a release landing at any point of it ends it: before the look, the look sees
/// the key free; after, the release's `KILL QUERY` ends the sleep, and `SLEEP`
/// answers 1 (0 when it slept out; -1 when the key was free). Binds: the cap in
/// seconds, name.
pub(super) fn sleep_statement(table: &str) -> String {
    format!(
        "SELECT CAST(COALESCE((SELECT SLEEP(LEAST(?, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), \
             expires_at) / 1000000)) FROM `{table}` \
             WHERE name = ? AND owner IS NOT NULL AND expires_at > UTC_TIMESTAMP(6)), -1) AS SIGNED)"
    )
}

/// How a sleep of the first in line ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Slept {
    /// A release woke it: the key is most likely free.
    Woken,
    /// It slept out its time, or the holder's lease ended.
    Out,
    /// It did not sleep: the key was free when it looked. Its attempt was
    /// refused all the same if a waiter queued ahead has the turn
    /// ([`crate::turns`]).
    Free,
}

/// The first in line, with `bell`, sleeps on its connection until a release
/// wakes it, the holder's lease ends, or `cap` passes ([`sleep_statement`]). The
/// bell back, with how the sleep ended; `None` if its connection failed (it is
/// closed: the next waiter gets the bell).
pub(super) async fn sleep(
    mut bell: Bell,
    statements: WaitStatements,
    key: LockKey,
    cap: Duration,
) -> Option<(Bell, Slept)> {
    let conn = bell.connection()?;
    let marked = sqlx::query(AssertSqlSafe(statements.mark))
        .bind(key.as_str())
        .execute(&mut *conn)
        .within(statements.timeout)
        .await;
    match marked {
        Ok(_) => {}
        // A release's wake-up, already.
        Err(e) if is_interrupted(&e) => return Some((bell, Slept::Woken)),
        Err(e) => {
            tracing::debug!(error = %e, "MySQL doorbell: the first in line could not mark the key");
            return None;
        }
    }
    // Every row read, so that an error the server sends after the row (the
    // kill noticed late) stays with this statement, not the next.
    let slept = sqlx::query_scalar::<_, i64>(AssertSqlSafe(statements.sleep))
        .bind(cap.as_secs_f64())
        .bind(key.as_str())
        .fetch_all(conn)
        .within(cap + statements.timeout)
        .await;
    match slept {
        // Slept out, or the lease ended: 0. A release killed the sleep: `SLEEP`
        // answers 1, or the server fails the statement with "query execution
        // was interrupted".
        Ok(answers) => Some((
            bell,
            match answers.first() {
                Some(1) => Slept::Woken,
                Some(-1) => Slept::Free,
                _ => Slept::Out,
            },
        )),
        Err(e) if is_interrupted(&e) => Some((bell, Slept::Woken)),
        Err(e) => {
            tracing::debug!(error = %e, "MySQL doorbell: the first in line's sleep failed");
            None
        }
    }
}
