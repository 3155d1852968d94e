//! Several free keys at once ([`lockkit_core::LockDriver::try_acquire_all`]):
//! each key's exclusive upsert ([`super::sql::acquire`]) in one transaction at
//! REPEATABLE READ (invariant M4), committed only if every key was granted: no
//! other client ever sees part of the set, and the set costs one commit.

use lockkit_core::{AcquireRequest, Grant, Result};

use super::leases::{MySqlLeases, db_error};
use super::many::BEGIN;
use crate::connect::Within;
use crate::error::is_conflict;

impl MySqlLeases {
    /// Exclusive holds of every key of `reqs`, or none (the transaction rolls
    /// back) if any key is held, not its turn, or the transaction deadlocks.
    pub(super) async fn take_all(&self, reqs: &[AcquireRequest]) -> Result<Option<Vec<Grant>>> {
        let mut tx = self
            .pool
            .begin_with(BEGIN)
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        let mut grants = Vec::with_capacity(reqs.len());
        for req in reqs {
            match self.acquire_exclusive_on(&mut tx, req).await? {
                Some(grant) => grants.push(grant),
                // Dropping the transaction rolls it back: nothing is taken.
                None => return Ok(None),
            }
        }
        match tx.commit().within(self.timeout).await {
            Ok(()) => Ok(Some(grants)),
            Err(e) if is_conflict(&e) => Ok(None),
            Err(e) => Err(db_error(e)),
        }
    }
}
