//! Several free keys at once ([`lockkit_core::LockDriver::try_acquire_all`]):
//! each key's exclusive upsert ([`super::sql::acquire`]), all in one `BEGIN
//! IMMEDIATE` transaction, committed only if every key was granted. One write
//! lock and one commit for the whole set.

use lockkit_core::{AcquireRequest, Grant, Result};
use tokio::time::Instant;

use super::leases::{SqliteLeases, db_error};

impl SqliteLeases {
    /// Exclusive holds of every key of `reqs`, or none (the transaction rolls
    /// back) if any key is held or not its turn.
    pub(super) async fn take_all(&self, reqs: &[AcquireRequest]) -> Result<Option<Vec<Grant>>> {
        let sent = Instant::now();
        let mut tx = self.begin_write().await?;
        let mut grants = Vec::with_capacity(reqs.len());
        for req in reqs {
            match self.take_exclusive(&mut *tx, req, sent).await? {
                Some(grant) => grants.push(grant),
                // Dropping the transaction rolls it back: nothing is taken.
                None => return Ok(None),
            }
        }
        tx.commit().await.map_err(db_error)?;
        Ok(Some(grants))
    }
}
