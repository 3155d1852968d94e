//! Several free keys at once ([`lockkit_core::LockDriver::try_acquire_all`]):
//! each key's exclusive upsert ([`super::sql::acquire`]) in one transaction,
//! committed only if every key was granted: no other client ever sees part of
//! the set, and the set costs one commit.

use lockkit_core::{AcquireRequest, FencingToken, Grant, Result};
use sqlx::Row;
use tokio::time::Instant;

use super::leases::{PgLeases, db_error};
use super::take::{Take, take_values};
use crate::connect::Within;
use crate::error::is_conflict;

impl PgLeases {
    /// Exclusive holds of every key of `reqs`, or none (the transaction rolls
    /// back) if any key is held, not its turn, or the transaction conflicts
    /// with another (a deadlock, a serialization failure).
    pub(super) async fn take_all(&self, reqs: &[AcquireRequest]) -> Result<Option<Vec<Grant>>> {
        let sent = Instant::now();
        let mut tx = self
            .pool
            .begin()
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        let mut grants = Vec::with_capacity(reqs.len());
        for req in reqs {
            let (owner, label) = (req.owner.to_hex(), req.stored_label());
            let values = take_values(req, &owner, label.as_deref(), &Take::First);
            let row = self
                .wire
                .row(&mut *tx, &self.statements.acquire, &values)
                .within(self.timeout)
                .await;
            let fence: i64 = match row {
                Ok(Some(row)) => row.try_get(0).map_err(db_error)?,
                // Dropping the transaction rolls it back: nothing is taken.
                Ok(None) => return Ok(None),
                Err(e) if is_conflict(&e) => return Ok(None),
                Err(e) => return Err(db_error(e)),
            };
            grants.push(Grant::of(req, FencingToken(fence as u64), sent + req.ttl));
        }
        match tx.commit().within(self.timeout).await {
            Ok(()) => Ok(Some(grants)),
            // Rolled back: nothing was taken.
            Err(e) if is_conflict(&e) => Ok(None),
            Err(e) => Err(db_error(e)),
        }
    }
}
