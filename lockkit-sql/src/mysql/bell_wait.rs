//! A waiter's wait on a key's bell ([`super::doorbell`]), which takes the key on
//! the server once the bell is rung ([`super::bound`]).

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use lockkit_core::{FencingToken, LockKey};
use sqlx::mysql::MySqlConnection;
use sqlx::{AssertSqlSafe, Either, Row};
use tokio::time::Instant;

use super::bound;
use super::doorbell::Bell;
use crate::connect::Within;
use crate::error::is_interrupted;

/// A wait on a bell that answered sooner than this did not block: the bell was
/// free, or the server did not wait.
const AT_ONCE: Duration = Duration::from_millis(10);

/// What a wait on a bell runs, and each statement's limit.
#[derive(Debug, Clone)]
pub(super) struct WaitStatements {
    /// [`super::bound::arm`].
    pub(super) arm: Arc<str>,
    /// [`super::bound::WAIT_AND_TAKE`].
    pub(super) wait_and_take: Arc<str>,
    /// The first in line's wait: see [`super::first_in_line::sleep_statement`].
    pub(super) sleep: Arc<str>,
    /// Each statement's limit (`request_timeout_ms`). A wait's is this past its
    /// own end: after that, its connection is given up for dead.
    pub(super) timeout: Duration,
}

/// What the waiter takes the key as, once rung.
#[derive(Debug, Clone)]
pub(super) struct Taker {
    pub(super) owner: String,
    pub(super) label: Option<String>,
    pub(super) ttl: Duration,
}

/// What a wait on a bell came to.
#[derive(Debug)]
pub(super) enum Rung {
    /// Rung, and the key taken on the server: its token, and the lease's end,
    /// measured from before the wait was armed. The lease is bound to the bell
    /// until it is confirmed ([`super::bound::confirm`]).
    Took {
        bell: Bell,
        token: FencingToken,
        deadline: Instant,
    },
    /// The bell is ours, the key was not free: attempt, and keep the bell with
    /// a grant.
    Ours { bell: Bell },
    /// Nobody rang in time: attempt again; `at_once` if the server did not
    /// block at all (the lock looked free or expired), so that the next pause
    /// is a poll's, not another wait on a bell that a waiter keeps.
    TimedOut { at_once: bool },
    /// The server answered at once or not at all, where it should have blocked:
    /// poll instead.
    Unusable,
}

/// What the statements of [`super::bound::WAIT_AND_TAKE`] answered.
#[derive(Default)]
struct Answers {
    /// The wait asked for, in seconds, `GET_LOCK`'s answer, and the µs from
    /// the arming to the wait's end, on the server's clock.
    waited_on: Option<(f64, Option<i64>, Option<i64>)>,
    /// The token, if the key was taken: whatever the rest answered, the key is
    /// then ours.
    token: u64,
    error: Option<sqlx::Error>,
}

/// Waits on `bell`'s bell for at most `cap` (and the holder's lease left), and
/// takes the key as `taker` once rung; a server that has not answered
/// `statements.timeout` after that is taken for gone.
pub(super) async fn wait(
    mut bell: Bell,
    statements: WaitStatements,
    key: LockKey,
    taker: Taker,
    cap: Duration,
) -> Rung {
    let name = bell.name().to_owned();
    let Some(conn) = bell.connection() else {
        return Rung::Unusable;
    };
    let armed_at = Instant::now();
    let armed = sqlx::query(AssertSqlSafe(statements.arm))
        .bind(cap.as_secs_f64())
        .bind(key.as_str())
        .bind(name)
        .bind(key.as_str())
        .bind(taker.owner)
        .bind(taker.label)
        .bind(super::leases::ttl_us(taker.ttl))
        .execute(&mut *conn)
        .within(statements.timeout)
        .await;
    match armed {
        Ok(_) => {}
        Err(e) if is_interrupted(&e) => return woken_late(bell),
        Err(_) => return Rung::Unusable,
    }
    let sent = Instant::now();
    let answers = tokio::time::timeout(
        cap + statements.timeout,
        answers(conn, statements.wait_and_take),
    )
    .await;
    let waited = sent.elapsed();
    let Ok(answers) = answers else {
        // No answer in time: the connection is given up (closing it frees the
        // bell, and voids a lease the server may have bound to it).
        return Rung::Unusable;
    };
    match answers.waited_on {
        Some((_, Some(1), woke_after_us)) if answers.token > 0 => {
            // The server took the key `woke_after` or more after the arming,
            // which ran after `armed_at`: dated from there, the lease ends no
            // later than on the server (a server clock that jumped is held to
            // the time that passed here).
            let woke_after = woke_after_us
                .and_then(|us| u64::try_from(us).ok())
                .map_or(Duration::ZERO, Duration::from_micros)
                .min(armed_at.elapsed());
            Rung::Took {
                bell,
                token: FencingToken(answers.token),
                deadline: armed_at + woke_after + taker.ttl,
            }
        }
        // The bell is ours; the key was not free, or the take failed.
        Some((_, Some(1), _)) => match answers.error {
            Some(e) if e.as_database_error().is_none() => Rung::Unusable,
            _ => Rung::Ours { bell },
        },
        Some((asked, Some(_), _)) => {
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
        Some((_, None, _)) if waited < cap => woken_late(bell),
        None if answers.error.as_ref().is_some_and(is_interrupted) => woken_late(bell),
        Some((_, None, _)) | None => Rung::Unusable,
    }
}

/// Reads every answer of the wait's statements, up to the first error. The take
/// is whichever result after the wait's row changed one row and set a token: a
/// grant is never read as a refusal. A value that does not decode reads as
/// missing (`asked` and the wake-up's time only refine what follows).
async fn answers(conn: &mut MySqlConnection, batch: Arc<str>) -> Answers {
    let mut answers = Answers::default();
    let mut stream = sqlx::raw_sql(AssertSqlSafe(batch)).fetch_many(conn);
    while let Some(next) = stream.next().await {
        match next {
            Ok(Either::Left(result)) => {
                if answers.waited_on.is_some()
                    && result.rows_affected() == 1
                    && result.last_insert_id() > 0
                {
                    answers.token = result.last_insert_id();
                }
            }
            Ok(Either::Right(row)) if answers.waited_on.is_none() => {
                let got = row.try_get::<Option<i64>, _>(1).unwrap_or(None);
                let asked = row.try_get::<f64, _>(0).unwrap_or(0.0);
                answers.waited_on = Some((asked, got, row.try_get(2).unwrap_or(None)));
            }
            Ok(Either::Right(_)) => {}
            Err(e) => {
                answers.error = Some(e);
                break;
            }
        }
    }
    answers
}

/// Frees the key that the bell's wait was armed for ([`super::bound::arm`]),
/// if its owner still holds it, and rings the bell, in one request on the
/// bell's connection ([`super::bound::RELEASE_AND_RING`]): a waited-for hold's
/// release, or a key taken for an acquire that has ended. Whether it freed a
/// hold; `None` if that is not known (no connection, or no answer to the
/// release in time): the bell is then closed, which rings it too, and the
/// caller releases on another connection.
pub(super) async fn release_and_ring(mut bell: Bell, limit: Duration) -> Option<bool> {
    let conn = bell.connection()?;
    let answers = async {
        let (mut freed, mut rung) = (None, false);
        let mut stream = sqlx::raw_sql(AssertSqlSafe(bound::RELEASE_AND_RING)).fetch_many(conn);
        while let Some(next) = stream.next().await {
            match next {
                Ok(Either::Left(done)) if freed.is_none() => {
                    freed = Some(done.rows_affected() > 0);
                }
                Ok(Either::Left(_)) => rung = true,
                Ok(Either::Right(_)) => {}
                Err(e) => {
                    tracing::debug!(error = %e, "MySQL: a release on the bell's connection failed");
                    break;
                }
            }
        }
        (freed, rung)
    };
    let (freed, rung) = tokio::time::timeout(limit, answers)
        .await
        .unwrap_or((None, false));
    bell.finish(rung);
    freed
}

/// A wake-up meant for the bell's last holder landed on this wait, late: the
/// connection is fine, holds nothing, and goes back to the pool; poll once, then
/// wait on the bell again.
fn woken_late(mut bell: Bell) -> Rung {
    drop(bell.release_connection());
    Rung::TimedOut { at_once: true }
}

#[cfg(test)]
mod tests;
