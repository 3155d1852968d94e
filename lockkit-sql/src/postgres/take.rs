//! An exclusive attempt on the lease table: which statement it runs
//! ([`Take`]), the values that statement binds, and the run itself.

use lockkit_core::{AcquireRequest, FencingToken, Grant, Result};
use sqlx::Row;
use tokio::time::Instant;

use super::leases::{PgLeases, db_error, ttl_ms};
use super::queue;
use super::wire::Value;
use crate::connect::Within;
use crate::error::retry_conflicts;

/// Which exclusive attempt [`PgLeases::take`] runs: its statement, and the
/// parameters that statement adds.
pub(super) enum Take<'a> {
    /// The plain upsert ([`super::sql::acquire`]).
    First,
    /// A waiter's later attempt, which looks first ([`super::sql::acquire_if_free`]).
    Again,
    /// Joining the queue as this waiter ([`super::waiter_sql::join_queue`]).
    Join(&'a str),
    /// This queued waiter's attempt ([`super::waiter_sql::acquire_queued`]).
    Queued(&'a str),
}

impl PgLeases {
    /// Runs the exclusive attempt `which` for `req`: the grant, or `None`.
    pub(super) async fn take(
        &self,
        req: &AcquireRequest,
        which: Take<'_>,
    ) -> Result<Option<Grant>> {
        let statements = &self.statements;
        let statement = match which {
            Take::First => &statements.acquire,
            Take::Again => &statements.acquire_if_free,
            Take::Join(_) => &statements.join_queue,
            Take::Queued(_) => &statements.acquire_queued,
        };
        let sent = Instant::now();
        let (owner, label) = (req.owner.to_hex(), req.stored_label());
        let values = take_values(req, &owner, label.as_deref(), &which);
        let row = retry_conflicts(|| self.wire.row(&self.warm, statement, &values))
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        // A join answers with a row either way: its token (NULL when refused)
        // and whether the key is free now.
        let fence: Option<i64> = match &row {
            Some(r) => r.try_get(0).map_err(db_error)?,
            None => None,
        };
        if let (Take::Join(waiter), None, Some(r)) = (&which, fence, &row)
            && r.try_get::<bool, _>(1).map_err(db_error)?
        {
            // A release passed us by unnotified: attempt again at once.
            self.wakeups.wake_waiter(waiter);
        }
        Ok(fence.map(|f| Grant::of(req, FencingToken(f as u64), sent + req.ttl)))
    }
}

/// What `which`'s statement binds for `req`: name, owner, TTL, label, then
/// the waiter's (when queued), then whether the request is fair.
pub(super) fn take_values<'v>(
    req: &'v AcquireRequest,
    owner: &'v str,
    label: Option<&'v str>,
    which: &Take<'v>,
) -> Vec<Value<'v>> {
    let mut values = vec![
        Value::Text(req.key.as_str()),
        Value::Text(owner),
        Value::Float(ttl_ms(req.ttl)),
        Value::MaybeText(label),
    ];
    match which {
        Take::First | Take::Again => {}
        Take::Join(waiter) => {
            values.extend([Value::Text(waiter), Value::Float(ttl_ms(queue::ROW_TTL))]);
        }
        Take::Queued(waiter) => values.push(Value::Text(waiter)),
    }
    values.push(Value::Int(i64::from(req.fair)));
    values
}
