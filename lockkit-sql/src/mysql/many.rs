//! Shared holds and permits on MySQL/MariaDB: many holders of one key, decided by
//! [`lockkit_core::driver::admit`] in a short transaction that locks the key row
//! first (see [`super::holder_sql`]), in its turn ([`crate::turns`]).

use lockkit_core::driver::{AcquireRequest, Admission, Grant, LockMode, admit};
use lockkit_core::{FencingToken, LockError, LockKey, OwnerId, Result};
use sqlx::{AssertSqlSafe, MySql, Transaction};
use tokio::time::Instant;

use super::leases::{MySqlLeases, NAME, db_error, ttl_us};
use crate::connect::Within;
use crate::error::{is_conflict, retry_conflicts};
use crate::holds::{self, HolderRow, InspectRow, KeyRow};
use crate::lease::busy_as_none;
use crate::mode_names;
use crate::turns;

/// How a shared hold's or permit's transaction starts: at REPEATABLE READ, the
/// level its statements were written for, whatever the server's default
/// (invariant M4). Under SERIALIZABLE, the holders read would take next-key
/// locks into the next key's rows, and two keys' acquires could deadlock.
/// (Not READ COMMITTED: with statement-based binary logging InnoDB refuses
/// its writes.)
pub(super) const BEGIN: &str = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ; START TRANSACTION";

/// A deadlock with another transaction is [`LockError::Contended`], which
/// [`MySqlLeases::try_acquire_many`] turns into "busy": nothing took effect.
fn conflict_or(key: &LockKey, e: sqlx::Error) -> LockError {
    if is_conflict(&e) {
        LockError::Contended {
            key: key.to_string(),
        }
    } else {
        db_error(e)
    }
}

impl MySqlLeases {
    /// Runs `statement` in `tx` with `binds`: how many rows it changed.
    async fn exec(
        &self,
        tx: &mut Transaction<'static, MySql>,
        statement: &std::sync::Arc<str>,
        binds: &[&str],
    ) -> Result<u64, sqlx::Error> {
        let mut q = sqlx::query(AssertSqlSafe(statement.clone()));
        for b in binds {
            q = q.bind(*b);
        }
        Ok(q.execute(&mut **tx)
            .within(self.timeout)
            .await?
            .rows_affected())
    }

    /// A transaction whose first statement has locked `key`'s row (creating it,
    /// free, for a key never seen): its owner, fence, ms left and label.
    async fn lock_key(
        &self,
        key: &LockKey,
    ) -> Result<(Transaction<'static, MySql>, KeyRow), sqlx::Error> {
        let st = &self.statements;
        let mut tx = self.pool.begin_with(BEGIN).within(self.timeout).await?;
        for _ in 0..2 {
            let row: Option<KeyRow> = sqlx::query_as(AssertSqlSafe(st.lock_key.clone()))
                .bind(key.as_str())
                .fetch_optional(&mut *tx)
                .within(self.timeout)
                .await?;
            if let Some(row) = row {
                return Ok((tx, row));
            }
            self.exec(&mut tx, &st.create_key, &[key.as_str()]).await?;
        }
        Err(sqlx::Error::RowNotFound)
    }

    /// One attempt at a shared hold or permit: the grant, or `None` when it must
    /// wait.
    pub(super) async fn try_acquire_many(&self, req: &AcquireRequest) -> Result<Option<Grant>> {
        busy_as_none(self.acquire_many(req).await)
    }

    async fn acquire_many(&self, req: &AcquireRequest) -> Result<Option<Grant>> {
        let db = |e: sqlx::Error| conflict_or(&req.key, e);
        let sent = Instant::now();
        let st = &self.statements;
        let key = req.key.as_str();
        let owner = req.owner.to_hex();
        let ttl = ttl_us(req.ttl);
        let (mut tx, row) = self.lock_key(&req.key).await.map_err(db)?;
        let rows: Vec<HolderRow> = sqlx::query_as(AssertSqlSafe(st.holders.clone()))
            .bind(key)
            .fetch_all(&mut *tx)
            .within(self.timeout)
            .await
            .map_err(db)?;
        let held = holds::held(Some(&row), &rows);
        let admission = admit(NAME, req, &held, []);
        let admission = turns::in_turn(admission, req, held.len(), || {
            self.live_queue(&mut *tx, &req.key)
        })
        .await
        .map_err(db)?;
        let token = match admission {
            Admission::Wait => return Ok(None),
            Admission::Refuse(e) => return Err(e),
            Admission::Reenter(token) => {
                // Ours already (a retry, or a read under our write hold): renew it.
                let exclusive = held.iter().any(|h| h.mode == LockMode::Exclusive);
                let renewed = if exclusive {
                    sqlx::query(AssertSqlSafe(st.extend.clone()))
                        .bind(ttl)
                        .bind(key)
                        .bind(&owner)
                } else {
                    sqlx::query(AssertSqlSafe(st.extend_holder.clone()))
                        .bind(ttl)
                        .bind(ttl)
                        .bind(key)
                        .bind(&owner)
                }
                .execute(&mut *tx)
                .within(self.timeout)
                .await
                .map_err(db)?;
                if renewed.rows_affected() == 0 {
                    return Ok(None);
                }
                token
            }
            Admission::Admit => {
                for (dead, ..) in rows.iter().filter(|r| r.4 <= 0 && r.0 != owner) {
                    self.exec(&mut tx, &st.forget_dead, &[key, dead])
                        .await
                        .map_err(db)?;
                }
                let claimed = sqlx::query(AssertSqlSafe(st.claim.clone()))
                    .bind(ttl)
                    .bind(ttl)
                    .bind(key)
                    .execute(&mut *tx)
                    .within(self.timeout)
                    .await
                    .map_err(db)?;
                sqlx::query(AssertSqlSafe(st.insert_holder.clone()))
                    .bind(key)
                    .bind(&owner)
                    .bind(mode_names::mode_name(req.mode))
                    .bind(req.mode.limit().map(i64::from))
                    .bind(ttl)
                    .bind(req.stored_label())
                    .execute(&mut *tx)
                    .within(self.timeout)
                    .await
                    .map_err(db)?;
                FencingToken(claimed.last_insert_id())
            }
        };
        tx.commit().within(self.timeout).await.map_err(db)?;
        Ok(Some(Grant::of(req, token, sent + req.ttl)))
    }

    /// Renews `owner`'s shared hold or permit; whether it was live.
    pub(super) async fn extend_holder(
        &self,
        key: &LockKey,
        owner: &OwnerId,
        ttl: i64,
    ) -> Result<bool> {
        let done = sqlx::query(AssertSqlSafe(self.statements.extend_holder.clone()))
            .bind(ttl)
            .bind(ttl)
            .bind(key.as_str())
            .bind(owner.to_hex())
            .execute(&self.pool)
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        Ok(done.rows_affected() > 0)
    }

    /// Removes `owner`'s shared hold or permit; whether it was live.
    pub(super) async fn release_holder(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        let gone = retry_conflicts(|| self.release_holder_once(key, owner))
            .await
            .map_err(db_error)?;
        Ok(gone > 0)
    }

    async fn release_holder_once(
        &self,
        key: &LockKey,
        owner: &OwnerId,
    ) -> Result<u64, sqlx::Error> {
        let st = &self.statements;
        let (mut tx, _) = self.lock_key(key).await?;
        let name = key.as_str();
        let gone = self
            .exec(&mut tx, &st.release_holder, &[name, &owner.to_hex()])
            .await?;
        if gone > 0 {
            self.exec(&mut tx, &st.settle, &[name, name]).await?;
        }
        tx.commit().within(self.timeout).await?;
        Ok(gone)
    }

    /// Frees `key` whoever holds it, every shared hold and permit with it.
    pub(super) async fn force_release_all(&self, key: &LockKey) -> Result<bool> {
        let freed = retry_conflicts(|| self.force_release_once(key))
            .await
            .map_err(db_error)?;
        Ok(freed > 0)
    }

    async fn force_release_once(&self, key: &LockKey) -> Result<u64, sqlx::Error> {
        let st = &self.statements;
        let (mut tx, _) = self.lock_key(key).await?;
        let name = key.as_str();
        self.exec(&mut tx, &st.forget_holders, &[name]).await?;
        let freed = self.exec(&mut tx, &st.force_release, &[name]).await?;
        tx.commit().within(self.timeout).await?;
        Ok(freed)
    }

    /// The key row and its holders rows, read in one statement, without locks.
    pub(super) async fn read_rows(
        &self,
        key: &LockKey,
    ) -> Result<(Option<KeyRow>, Vec<HolderRow>)> {
        let rows: Vec<InspectRow> = sqlx::query_as(AssertSqlSafe(self.statements.inspect.clone()))
            .bind(key.as_str())
            .bind(key.as_str())
            .fetch_all(&self.pool)
            .within(self.timeout)
            .await
            .map_err(db_error)?;
        Ok(holds::split(rows))
    }
}
