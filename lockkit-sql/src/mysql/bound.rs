//! Leases bound to a bell: how a rung waiter is granted without a round trip.
//!
//! A waiter's wait on the key's bell ([`super::bell_wait`]) is one request of
//! several statements: `GET_LOCK` on the bell, then, on the server, as soon as
//! the bell is rung, the `UPDATE` that takes the key. The grant comes back with
//! the wake-up, instead of one round trip after it.
//!
//! The server cannot tell that the client is still there: a waiter that died
//! while it waited would be granted too (MariaDB notices a closed connection
//! only once a second while it waits on a user lock). So a lease taken this way
//! is *bound* to the bell until its holder confirms it: the row's `bound`
//! column holds the lease's fence, and the lease stands only while its taker's
//! connection holds the key's bell. Its holder keeps that bell until its
//! release, so whoever else holds the bell knows the lease is void: its taker
//! died, or lost its connection, before it could confirm. Only a connection
//! holding the bell takes a bound lease over ([`super::sql::take_free`], the
//! wait's `UPDATE`); to every other statement it is a lease like any other.
//!
//! The holder confirms it [`CONFIRM_AFTER`] the grant, unless it released it
//! first, on another connection ([`confirm`]); a renewal confirms too. `bound`
//! is cleared, and from then on the lease stands until it ends, bell or no
//! bell. If the lease was taken over before the confirmation landed (the
//! holder's bell connection failed), the grant's loss signal fires then.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::{FencingToken, LockKey, LossSignal, OwnerId};
use sqlx::AssertSqlSafe;
use sqlx::mysql::MySqlPool;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::doorbell::BELL;
use crate::connect::Within;

/// What a waiter sets on its bell's connection before it waits ([`WAIT_AND_TAKE`]): the server's
/// time (`@lockkit_since`), how long to wait on the bell (`@lockkit_wait`: at
/// most the cap, bound first, and the lease left of the key, 0 if it is free or
/// expired), the bell, and what to take the key as. Binds: cap in seconds,
/// name; the bell's `'<table>:<key>'`; name, owner, label, TTL µs.
pub(super) fn arm(t: &str) -> String {
    format!(
        "SET @lockkit_since = NOW(6), @lockkit_wait = LEAST(?, GREATEST(0, COALESCE((\
             SELECT TIMESTAMPDIFF(MICROSECOND, NOW(6), expires_at) FROM `{t}` \
             WHERE name = ? AND owner IS NOT NULL), 0)) / 1000000) + 0e0, \
         @lockkit_bell = {BELL}, @lockkit_name = ?, @lockkit_owner = ?, \
         @lockkit_label = ?, @lockkit_ttl = ?"
    )
}

/// The wait itself, after [`arm`]: the two statements that [`prepare`] made
/// on the bell's connection, in one request.
pub(super) const WAIT_AND_TAKE: &str = "EXECUTE lockkit_wait; EXECUTE lockkit_take";

/// Prepares, on a new bell connection, the statements of [`WAIT_AND_TAKE`]
/// (on the server: parsed once, not at every wake-up). They read what [`arm`]
/// set.
/// 1. `lockkit_wait` waits on the bell: answers the wait asked for,
///    `GET_LOCK`'s answer, and the µs from [`arm`] to the wait's end
///    (`SYSDATE`, read after `GET_LOCK` answered), from which the client dates
///    a lease the next statement takes (see [`super::bell_wait`]): no later
///    than that statement's `NOW(6)`.
/// 2. `lockkit_take`, holding the bell, takes the key if it is free, expired
///    or bound (to a bell that is now ours): binds it to the bell, and the
///    token is the statement's last-insert id.
///
/// And `lockkit_release`, for [`RELEASE_AND_RING`].
pub(super) fn prepare(t: &str) -> String {
    format!(
        "PREPARE lockkit_wait FROM 'SELECT @lockkit_wait + 0e0, GET_LOCK(@lockkit_bell, @lockkit_wait),
             TIMESTAMPDIFF(MICROSECOND, @lockkit_since, SYSDATE(6))';
         PREPARE lockkit_take FROM 'UPDATE `{t}` SET fence = LAST_INSERT_ID(fence + 1),
             owner = @lockkit_owner, label = @lockkit_label,
             expires_at = NOW(6) + INTERVAL @lockkit_ttl MICROSECOND, bound = fence
         WHERE name = @lockkit_name AND IS_USED_LOCK(@lockkit_bell) = CONNECTION_ID()
           AND (owner IS NULL OR expires_at <= NOW(6) OR bound = fence)';
         PREPARE lockkit_release FROM 'UPDATE `{t}` SET owner = NULL,
             expires_at = ''1970-01-01 00:00:01''
         WHERE name = @lockkit_name AND owner = @lockkit_owner AND expires_at > NOW(6)'"
    )
}

/// A hold's release on the bell's connection it waited on, which [`arm`] set
/// for its key and owner: frees the key if it is still the owner's, and rings
/// the bell, in one request ([`prepare`]'s `lockkit_release`).
pub(super) const RELEASE_AND_RING: &str = "EXECUTE lockkit_release; DO RELEASE_LOCK(@lockkit_bell)";

/// Confirms a bound lease: it no longer needs the bell. Binds: name, owner,
/// token.
pub(super) fn confirm_statement(t: &str) -> String {
    format!(
        "UPDATE `{t}` SET bound = NULL
         WHERE name = ? AND owner = ? AND fence = ? AND bound = fence"
    )
}

/// The key's fence now. Binds: name.
pub(super) fn fence_statement(t: &str) -> String {
    format!("SELECT fence FROM `{t}` WHERE name = ?")
}

/// The statements [`confirm`] runs.
#[derive(Debug, Clone)]
pub(super) struct Confirmation {
    pub(super) pool: MySqlPool,
    pub(super) confirm: Arc<str>,
    pub(super) fence: Arc<str>,
    pub(super) timeout: Duration,
}

/// How long a hold may stay bound before it is confirmed: one released sooner
/// (its bell rung) costs no statement.
pub(super) const CONFIRM_AFTER: Duration = Duration::from_secs(1);

/// The first pause after a confirmation that failed, and the longest: it is
/// sent again, the pause doubling, until it lands or the hold ends.
const CONFIRM_PAUSE: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(1));

/// Confirms `owner`'s bound lease of `key` (its `token`) `after` the grant, in a
/// task of its own, unless `released` answers first (its sender, kept with the
/// hold's bell, is dropped when the bell is rung), and until the lease's
/// `deadline`. Returns the grant's loss signal, which fires if the lease was
/// taken over first.
pub(super) fn confirm(
    how: Confirmation,
    (key, owner, token): (LockKey, &OwnerId, FencingToken),
    (after, mut released): (Duration, oneshot::Receiver<()>),
    deadline: Instant,
) -> LossSignal {
    let loss = LossSignal::new();
    let (signal, owner) = (loss.clone(), owner.to_hex());
    tokio::spawn(async move {
        let mut pause = (after, CONFIRM_PAUSE.0);
        loop {
            tokio::select! {
                _ = &mut released => return,
                () = tokio::time::sleep(pause.0) => {}
            }
            match confirm_once(&how, &key, &owner, token).await {
                Ok(true) => return,
                Ok(false) => {
                    return signal
                        .fire("a waiter took the lease over before its holder confirmed it");
                }
                Err(e) if Instant::now() + pause.1 < deadline => {
                    tracing::debug!(error = %e, "MySQL: could not confirm a lease; trying again");
                    pause = (pause.1, (pause.1 * 2).min(CONFIRM_PAUSE.1));
                }
                // The lease ends before another try: its deadline says it is over.
                Err(e) => {
                    return tracing::warn!(key = %key, error = %e, "MySQL: a lease was never confirmed");
                }
            }
        }
    });
    loss
}

/// Whether the lease still stands: confirmed now, or by a renewal, or already
/// released (the fence is still its token); `false` if someone took the key since.
async fn confirm_once(
    how: &Confirmation,
    key: &LockKey,
    owner: &str,
    token: FencingToken,
) -> Result<bool, sqlx::Error> {
    let token = i64::try_from(token.0).unwrap_or(i64::MAX);
    let done = sqlx::query(AssertSqlSafe(how.confirm.clone()))
        .bind(key.as_str())
        .bind(owner)
        .bind(token)
        .execute(&how.pool)
        .within(how.timeout)
        .await?;
    if done.rows_affected() > 0 {
        return Ok(true);
    }
    let fence: Option<i64> = sqlx::query_scalar(AssertSqlSafe(how.fence.clone()))
        .bind(key.as_str())
        .fetch_optional(&how.pool)
        .within(how.timeout)
        .await?;
    Ok(fence == Some(token))
}

#[cfg(test)]
mod tests;
