//! MySQL's waiters in the key's queue ([`crate::turns`]): joining it, leaving
//! it, and reading it.

use lockkit_core::{AcquireRequest, Inspection, LockKey, LockMode, Result};
use sqlx::mysql::MySql;
use sqlx::{AssertSqlSafe, Executor};

use super::exclusive::Query;
use super::leases::{MySqlLeases, db_error, ttl_us};
use crate::connect::Within;
use crate::holds;
use crate::mode_names::mode_name;
use crate::turns::{self, QueueRow};

impl MySqlLeases {
    /// Queues `req` behind its key's last waiter, or pushes its row out. A
    /// reader then marks the key's row past that row's expiry, so that write
    /// holds read their turn ([`super::sql::acquire`]).
    pub(super) async fn enqueue_row(&self, req: &AcquireRequest) -> Result<()> {
        let life = ttl_us(turns::LIFETIME);
        let enqueue = sqlx::query(AssertSqlSafe(self.statements.enqueue.clone()))
            .bind(req.key.as_str())
            .bind(req.owner.to_hex())
            .bind(mode_name(req.mode))
            .bind(life)
            .bind(life);
        self.execute(enqueue).await?;
        if req.mode == LockMode::Shared {
            let mark = sqlx::query(AssertSqlSafe(self.statements.readers_queued.clone()))
                .bind(life)
                .bind(req.key.as_str());
            self.execute(mark).await?;
        }
        Ok(())
    }

    /// Runs `query` on the pool.
    async fn execute(&self, query: Query<'_>) -> Result<()> {
        query
            .execute(&self.pool)
            .within(self.timeout)
            .await
            .map(drop)
            .map_err(db_error)
    }

    /// Takes `req`'s row out of its key's queue, and the key's lapsed rows.
    pub(super) async fn dequeue_row(&self, req: &AcquireRequest) -> Result<()> {
        self.leaving(req).await
    }

    /// [`Self::dequeue_row`], in a task of its own: after a grant, so that the
    /// grant does not wait for it. Until it lands, the holder's row only stands
    /// before requests that could not have the key anyway; if it fails, the
    /// row lapses.
    pub(super) fn dequeue_row_later(&self, req: &AcquireRequest) {
        let leaving = self.leaving(req);
        tokio::spawn(async move {
            if let Err(e) = leaving.await {
                tracing::debug!(error = %e, "could not leave the queue; the row lapses");
            }
        });
    }

    /// The delete of [`Self::dequeue_row`], owning what it needs.
    fn leaving(&self, req: &AcquireRequest) -> impl Future<Output = Result<()>> + Send + 'static {
        let query = sqlx::query(AssertSqlSafe(self.statements.dequeue.clone()))
            .bind(req.key.as_str().to_owned())
            .bind(req.owner.to_hex());
        let (pool, timeout) = (self.pool.clone(), self.timeout);
        async move {
            query
                .execute(&pool)
                .within(timeout)
                .await
                .map(drop)
                .map_err(db_error)
        }
    }

    /// `key`'s live queue, in order, read on `conn`.
    pub(super) async fn live_queue<'c, E>(
        &self,
        conn: E,
        key: &LockKey,
    ) -> Result<Vec<QueueRow>, sqlx::Error>
    where
        E: Executor<'c, Database = MySql>,
    {
        sqlx::query_as(AssertSqlSafe(self.statements.live_queue.clone()))
            .bind(key.as_str())
            .fetch_all(conn)
            .within(self.timeout)
            .await
    }

    /// The key's holders, with how many wait in its queue.
    pub(super) async fn inspect_with_waiters(&self, key: &LockKey) -> Result<Inspection> {
        let (row, many) = self.read_rows(key).await?;
        let queue = self.live_queue(&self.pool, key).await.map_err(db_error)?;
        Ok(holds::inspection(key, row.as_ref(), &many).with_waiters(queue.len()))
    }
}
