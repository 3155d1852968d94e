//! Several free keys at once ([`lockkit_core::LockDriver::try_acquire_all`]):
//! each key's exclusive upsert ([`super::sql::acquire`]) in one transaction,
//! committed only if every key was granted: no other client ever sees part of
//! the set, and the set costs one commit.

use lockkit_core::{AcquireRequest, FencingToken, Grant, Result};
use sqlx::postgres::{PgConnection, Postgres};
use sqlx::{Connection, Row, Transaction};
use tokio::time::Instant;

use super::leases::{PgLeases, db_error};
use super::take::{Take, take_values};
use crate::connect::Within;
use crate::error::is_conflict;

/// What a set came to, and whether its transaction ended (committed or rolled
/// back), so that its connection has nothing left to send or read.
type Ended = (Result<Option<Vec<Grant>>>, bool);

impl PgLeases {
    /// Exclusive holds of every key of `reqs`, or none (the transaction rolls
    /// back) if any key is held, not its turn, or the transaction conflicts
    /// with another (a deadlock, a serialization failure). Runs on a warm
    /// connection, kept for the next statement only if the transaction ended.
    pub(super) async fn take_all(&self, reqs: &[AcquireRequest]) -> Result<Option<Vec<Grant>>> {
        let mut conn = self
            .warm
            .conn()
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        let (taken, ended) = self.take_all_on(&mut conn, reqs).await;
        conn.done(ended);
        taken
    }

    /// [`Self::take_all`] on `conn`. A refused set rolls back at once: a kept
    /// connection would otherwise hold the keys it took, row-locked, until its
    /// next statement sent the rollback that dropping a transaction queues.
    async fn take_all_on(&self, conn: &mut PgConnection, reqs: &[AcquireRequest]) -> Ended {
        let sent = Instant::now();
        let mut tx = match conn.begin().within(self.timeout).await {
            Ok(tx) => tx,
            Err(e) => return (Err(db_error(e)), false),
        };
        let mut grants = Vec::with_capacity(reqs.len());
        for req in reqs {
            let (owner, label) = (req.owner.to_hex(), req.stored_label());
            let values = take_values(req, &owner, label.as_deref(), &Take::First);
            let row = self
                .wire
                .row(&mut *tx, &self.statements.acquire, &values)
                .within(self.timeout)
                .await;
            let fence: i64 = match row.map(|row| row.map(|row| row.try_get(0))) {
                Ok(Some(Ok(fence))) => fence,
                Ok(None) => return self.roll_back(tx).await,
                Err(e) if is_conflict(&e) => return self.roll_back(tx).await,
                // Dropped, the transaction queues its rollback, which sqlx's
                // release of the connection sends.
                Ok(Some(Err(e))) | Err(e) => return (Err(db_error(e)), false),
            };
            grants.push(Grant::of(req, FencingToken(fence as u64), sent + req.ttl));
        }
        match tx.commit().within(self.timeout).await {
            Ok(()) => (Ok(Some(grants)), true),
            // Rolled back by the server: nothing was taken.
            Err(e) if is_conflict(&e) => (Ok(None), false),
            Err(e) => (Err(db_error(e)), false),
        }
    }

    /// Rolls back a refused set: nothing is taken.
    async fn roll_back(&self, tx: Transaction<'_, Postgres>) -> Ended {
        let rolled_back = tx.rollback().within(self.timeout).await;
        (Ok(None), rolled_back.is_ok())
    }
}

#[cfg(test)]
mod tests;
