//! Several free keys at once ([`lockkit_core::LockDriver::try_acquire_all`]):
//! each key's exclusive upsert ([`super::sql::acquire`]), all in one `BEGIN
//! IMMEDIATE` transaction, committed only if every key was granted. One write
//! lock and one commit for the whole set.

use lockkit_core::{AcquireRequest, FencingToken, Grant, Result};
use sqlx::AssertSqlSafe;
use tokio::time::Instant;

use super::clock::Reading;
use super::leases::{SqliteLeases, db_error};

impl SqliteLeases {
    /// Exclusive holds of every key of `reqs`, or none (the transaction rolls
    /// back) if any key is held or not its turn.
    pub(super) async fn take_all(&self, reqs: &[AcquireRequest]) -> Result<Option<Vec<Grant>>> {
        let sent = Instant::now();
        let mut tx = self.begin_write().await?;
        let now = Reading::now();
        let mut grants = Vec::with_capacity(reqs.len());
        for req in reqs {
            let fence: Option<i64> =
                sqlx::query_scalar(AssertSqlSafe(self.statements.acquire.clone()))
                    .bind(req.key.as_str())
                    .bind(req.owner.to_hex())
                    .bind(now.expiry(req.ttl))
                    .bind(now.ms())
                    .bind(req.stored_label())
                    .bind(i64::from(req.fair))
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_error)?;
            match fence {
                Some(fence) => {
                    grants.push(Grant::of(req, FencingToken(fence as u64), sent + req.ttl))
                }
                // Dropping the transaction rolls it back: nothing is taken.
                None => return Ok(None),
            }
        }
        tx.commit().await.map_err(db_error)?;
        Ok(Some(grants))
    }
}
