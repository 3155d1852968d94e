//! Shared holds and semaphore permits: many holders of one key, in the holders
//! table, decided by [`lockkit_core::driver::admit`] inside one write transaction
//! (invariant S1).
//!
//! The rows and what they mean are in [`crate::holds`], shared by every lease
//! table.

use std::time::Duration;

use lockkit_core::driver::{AcquireRequest, Admission, Grant, LockMode, admit};
use lockkit_core::{FencingToken, LockKey, OwnerId, Result};
use sqlx::AssertSqlSafe;
use tokio::time::Instant;

use super::clock::{Reading, monotonic_ms};
use super::leases::{SqliteLeases, db_error};
use crate::holds::{self, HolderRow, KeyRow};
use crate::mode_names;
use crate::turns::{self, QueueRow};

impl SqliteLeases {
    /// One attempt at a shared hold or permit: the grant, or `None` when it must
    /// wait.
    pub(super) async fn try_acquire_many(&self, req: &AcquireRequest) -> Result<Option<Grant>> {
        let sent = Instant::now();
        let mut tx = self.begin_write().await?;
        let reading = Reading::now();
        let (now, expires) = (reading.ms(), reading.expiry(req.ttl));
        let st = &self.statements;
        let key = req.key.as_str();
        sqlx::query(AssertSqlSafe(st.drop_expired.clone()))
            .bind(key)
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        let row: Option<KeyRow> = sqlx::query_as(AssertSqlSafe(st.key_row.clone()))
            .bind(key)
            .bind(now)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_error)?;
        let many: Vec<HolderRow> = sqlx::query_as(AssertSqlSafe(st.live_holders.clone()))
            .bind(key)
            .bind(now)
            .fetch_all(&mut *tx)
            .await
            .map_err(db_error)?;
        let held = holds::held(row.as_ref(), &many);
        let admission = admit(super::leases::NAME, req, &held, []);
        let admission = turns::in_turn(admission, req, held.len(), || {
            sqlx::query_as::<_, QueueRow>(AssertSqlSafe(st.live_queue.clone()))
                .bind(key)
                .bind(now)
                .fetch_all(&mut *tx)
        })
        .await
        .map_err(db_error)?;
        let token = match admission {
            Admission::Wait => return Ok(None),
            Admission::Refuse(e) => return Err(e),
            Admission::Reenter(token) => {
                // Ours already (a retry, or a read under our write hold): renew it.
                let exclusive = held.iter().any(|h| h.mode == LockMode::Exclusive);
                let renew = if exclusive {
                    &st.extend
                } else {
                    &st.extend_holder
                };
                sqlx::query(AssertSqlSafe(renew.clone()))
                    .bind(key)
                    .bind(req.owner.to_hex())
                    .bind(expires)
                    .bind(now)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error)?;
                sqlx::query(AssertSqlSafe(st.raise_expiry.clone()))
                    .bind(key)
                    .bind(expires)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error)?;
                token
            }
            Admission::Admit => {
                let fence: i64 = sqlx::query_scalar(AssertSqlSafe(st.claim_for_many.clone()))
                    .bind(key)
                    .bind(expires)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(db_error)?;
                sqlx::query(AssertSqlSafe(st.insert_holder.clone()))
                    .bind(key)
                    .bind(req.owner.to_hex())
                    .bind(mode_names::mode_name(req.mode))
                    .bind(req.mode.limit().map(i64::from))
                    .bind(fence)
                    .bind(expires)
                    .bind(req.stored_label())
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error)?;
                FencingToken(fence as u64)
            }
        };
        tx.commit().await.map_err(db_error)?;
        Ok(Some(Grant::of(req, token, sent + req.ttl)))
    }

    /// Renews `owner`'s shared hold or permit; whether it was live. One write
    /// transaction: the hold's row, while the key row still keeps shared holds
    /// and is live, and the key row's expiry raised to the hold's, so that no
    /// writer takes the key between the two (invariant S1).
    pub(super) async fn extend_many_holder(
        &self,
        key: &LockKey,
        owner: &OwnerId,
        ttl: Duration,
    ) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let reading = Reading::now();
        let (now, expires) = (reading.ms(), reading.expiry(ttl));
        let done = sqlx::query(AssertSqlSafe(self.statements.extend_holder.clone()))
            .bind(key.as_str())
            .bind(owner.to_hex())
            .bind(expires)
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        sqlx::query(AssertSqlSafe(self.statements.raise_expiry.clone()))
            .bind(key.as_str())
            .bind(expires)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(true)
    }

    /// Removes `owner`'s shared hold or permit; whether it was live.
    pub(super) async fn release_many_holder(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        let now = monotonic_ms();
        let live: Option<bool> =
            sqlx::query_scalar(AssertSqlSafe(self.statements.release_holder.clone()))
                .bind(key.as_str())
                .bind(owner.to_hex())
                .bind(now)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_error)?;
        if live.is_some() {
            sqlx::query(AssertSqlSafe(self.statements.settle.clone()))
                .bind(key.as_str())
                .bind(now)
                .execute(&self.pool)
                .await
                .map_err(db_error)?;
        }
        Ok(live == Some(true))
    }

    /// The key row, its live holders rows and its live queue, read in one
    /// snapshot.
    pub(super) async fn read_rows(
        &self,
        key: &LockKey,
    ) -> Result<(Option<KeyRow>, Vec<HolderRow>, Vec<QueueRow>)> {
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        // Rounded up: these rows are shown, with the lease they have left.
        let now = Reading::now().ms_up();
        let row: Option<KeyRow> = sqlx::query_as(AssertSqlSafe(self.statements.key_row.clone()))
            .bind(key.as_str())
            .bind(now)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_error)?;
        let many: Vec<HolderRow> =
            sqlx::query_as(AssertSqlSafe(self.statements.live_holders.clone()))
                .bind(key.as_str())
                .bind(now)
                .fetch_all(&mut *tx)
                .await
                .map_err(db_error)?;
        let queue: Vec<QueueRow> =
            sqlx::query_as(AssertSqlSafe(self.statements.live_queue.clone()))
                .bind(key.as_str())
                .bind(now)
                .fetch_all(&mut *tx)
                .await
                .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok((row, many, queue))
    }
}
