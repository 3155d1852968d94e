//! Shared holds and permits on PostgreSQL: many holders of one key, decided by
//! [`lockkit_core::driver::admit`] in a short transaction that locks the key row
//! first (see [`super::holder_sql`]).

use lockkit_core::driver::{AcquireRequest, Admission, Grant, admit};
use lockkit_core::{FencingToken, LockError, LockKey, OwnerId, Result};
use sqlx::{FromRow, Postgres, Transaction};
use tokio::time::Instant;

use super::leases::{NAME, PgLeases, db_error, ttl_ms};
use super::wire::Value;
use crate::connect::Within;
use crate::error::{is_conflict, retry_conflicts};
use crate::holds::{self, HolderRow, InspectRow, KeyRow};
use crate::lease::busy_as_none;
use crate::mode_names;
use crate::turns::{self, QueueRow};

/// A collision with another transaction is [`LockError::Contended`], which
/// [`PgLeases::try_acquire_many`] turns into "busy"; any other error is the
/// database's.
fn conflict_or(key: &LockKey, e: sqlx::Error) -> LockError {
    if is_conflict(&e) {
        LockError::Contended {
            key: key.to_string(),
        }
    } else {
        db_error(e)
    }
}

/// How a shared hold's or permit's transaction starts: at READ COMMITTED, the
/// level its statements were written for, whatever the server's default
/// (invariant P5).
const BEGIN: &str = "BEGIN ISOLATION LEVEL READ COMMITTED";

impl PgLeases {
    /// A transaction whose first statement has locked `key`'s row: its owner,
    /// fence, ms left and label.
    async fn lock_key(
        &self,
        key: &LockKey,
    ) -> Result<(Transaction<'static, Postgres>, KeyRow), sqlx::Error> {
        let mut tx = self.pool.begin_with(BEGIN).within(self.timeout).await?;
        let row = self
            .wire
            .row(
                &mut *tx,
                &self.statements.lock_key,
                &[Value::Text(key.as_str())],
            )
            .within(self.timeout)
            .await?
            .ok_or(sqlx::Error::RowNotFound)?;
        Ok((tx, KeyRow::from_row(&row)?))
    }

    /// One attempt at a shared hold or permit: the grant, or `None` when it must
    /// wait (a deadlock with another transaction counts as busy: nothing changed).
    pub(super) async fn try_acquire_many(&self, req: &AcquireRequest) -> Result<Option<Grant>> {
        busy_as_none(self.acquire_many(req).await)
    }

    async fn acquire_many(&self, req: &AcquireRequest) -> Result<Option<Grant>> {
        let db_error = |e: sqlx::Error| conflict_or(&req.key, e);
        let sent = Instant::now();
        let st = &self.statements;
        let (mut tx, row) = self.lock_key(&req.key).await.map_err(db_error)?;
        let many = self
            .wire
            .rows(&mut *tx, &st.live_holders, &[Value::Text(req.key.as_str())])
            .within(self.timeout)
            .await
            .and_then(|rows| {
                rows.iter()
                    .map(HolderRow::from_row)
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(db_error)?;
        let (owner, label) = (req.owner.to_hex(), req.stored_label());
        let held = holds::held(Some(&row), &many);
        let admission = turns::in_turn(admit(NAME, req, &held, []), req, held.len(), || async {
            let rows = self
                .wire
                .rows(&mut *tx, &st.live_queue, &[Value::Text(req.key.as_str())])
                .within(self.timeout)
                .await?;
            rows.iter().map(QueueRow::from_row).collect()
        })
        .await
        .map_err(db_error)?;
        let token = match admission {
            Admission::Wait => return Ok(None),
            Admission::Refuse(e) => return Err(e),
            Admission::Reenter(token) => {
                // Ours already (a retry, or a read under our write hold): renew it.
                let values = [
                    Value::Text(req.key.as_str()),
                    Value::Text(&owner),
                    Value::Float(ttl_ms(req.ttl)),
                ];
                let renewed: i64 = self
                    .wire
                    .scalar(&mut *tx, &st.extend, &values)
                    .within(self.timeout)
                    .await
                    .map_err(db_error)?;
                if renewed == 0 {
                    return Ok(None);
                }
                token
            }
            Admission::Admit => {
                let values = [
                    Value::Text(req.key.as_str()),
                    Value::Text(&owner),
                    Value::Float(ttl_ms(req.ttl)),
                    Value::Text(mode_names::mode_name(req.mode)),
                    Value::MaybeInt(req.mode.limit().map(i64::from)),
                    Value::MaybeText(label.as_deref()),
                ];
                let token: i64 = self
                    .wire
                    .scalar(&mut *tx, &st.grant, &values)
                    .within(self.timeout)
                    .await
                    .map_err(db_error)?;
                FencingToken(token as u64)
            }
        };
        tx.commit().within(self.timeout).await.map_err(db_error)?;
        Ok(Some(Grant::of(req, token, sent + req.ttl)))
    }

    /// Removes `owner`'s shared hold or permit; whether it was live.
    pub(super) async fn release_holder(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        let statement = &self.statements.release_holder;
        let gone = retry_conflicts(|| self.in_key_lock(key, statement, Some(owner)))
            .await
            .map_err(db_error)?;
        Ok(gone > 0)
    }

    /// Frees `key` whoever holds it, every shared hold and permit with it.
    pub(super) async fn force_release_all(&self, key: &LockKey) -> Result<bool> {
        let statement = &self.statements.force_release;
        let freed = retry_conflicts(|| self.in_key_lock(key, statement, None))
            .await
            .map_err(db_error)?;
        Ok(freed > 0)
    }

    /// Runs `statement` (bound to the key, the owner if given, and the channel)
    /// with the key row locked: what it counts.
    async fn in_key_lock(
        &self,
        key: &LockKey,
        statement: &std::sync::Arc<str>,
        owner: Option<&OwnerId>,
    ) -> Result<i64, sqlx::Error> {
        let (mut tx, _) = self.lock_key(key).await?;
        let owner = owner.map(OwnerId::to_hex);
        let mut values = vec![Value::Text(key.as_str())];
        values.extend(owner.as_deref().map(Value::Text));
        values.push(Value::Text(&self.statements.channel));
        let n: i64 = self
            .wire
            .scalar(&mut *tx, statement, &values)
            .within(self.timeout)
            .await?;
        tx.commit().within(self.timeout).await?;
        Ok(n)
    }

    /// The key row and its holders rows, read in one statement, without locks.
    pub(super) async fn read_rows(
        &self,
        key: &LockKey,
    ) -> Result<(Option<KeyRow>, Vec<HolderRow>)> {
        let key_only = [Value::Text(key.as_str())];
        let rows = retry_conflicts(|| {
            self.wire
                .rows(&self.warm, &self.statements.inspect, &key_only)
        })
        .within(self.timeout)
        .await
        .and_then(|rows| {
            rows.iter()
                .map(InspectRow::from_row)
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(db_error)?;
        Ok(holds::split(rows))
    }
}
