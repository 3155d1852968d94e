//! The PostgreSQL floor: an upsert with `RETURNING` that takes the row when it is free
//! or expired and returns the fencing counter, then a releasing `UPDATE`.

use lockkit::LockError;

use super::held::Held;
use super::{Hold, RawLock, floor_error};

/// What the PostgreSQL floor sends.
pub(super) const DESCRIPTION: &str =
    "raw INSERT … ON CONFLICT … RETURNING + UPDATE via sqlx on a held connection, same server";

const FLOOR_TABLE_PG: &str = "CREATE TABLE IF NOT EXISTS lockkit_bench_floor (name TEXT PRIMARY KEY, owner TEXT, fence BIGINT NOT NULL, expires_at TIMESTAMPTZ NOT NULL)";

/// A PostgreSQL floor client: connections of its own, held.
pub(crate) struct PostgresFloor(Held<sqlx::Postgres>);

impl PostgresFloor {
    /// A client for a `postgres…://` URL (query options dropped), with the floor's table.
    pub(super) async fn connect(url: &str) -> Result<Self, LockError> {
        let (url, _) = url.split_once('?').unwrap_or((url, ""));
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(2)
            // No ping before each statement, as lockkit's pools (a raw client
            // would not send one either).
            .test_before_acquire(false)
            .connect(url)
            .await
            .map_err(|e| LockError::connection("postgres", e))?;
        sqlx::query(FLOOR_TABLE_PG)
            .execute(&pool)
            .await
            .map_err(floor_error)?;
        Ok(Self(Held::new(pool)))
    }
}

impl RawLock for PostgresFloor {
    async fn clean_up(&self, _keys: &[String]) {
        clean_floor_table!(self.0.pool())
    }

    async fn try_acquire(&self, key: &str, owner: &str) -> Result<Option<Hold>, LockError> {
        let mut conn = self.0.conn().await.map_err(floor_error)?;
        let fence: Option<i64> = sqlx::query_scalar(
            "INSERT INTO lockkit_bench_floor AS l (name, owner, fence, expires_at)
             VALUES ($1, $2, 1, clock_timestamp() + interval '30 seconds')
             ON CONFLICT (name) DO UPDATE SET fence = l.fence + 1, owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
             WHERE l.owner IS NULL OR l.expires_at <= clock_timestamp() RETURNING fence",
        )
        .bind(key)
        .bind(owner)
        .fetch_optional(&mut *conn)
        .await
        .map_err(floor_error)?;
        conn.done();
        Ok(fence.map(|_| Hold(owner.to_owned())))
    }

    async fn release(&self, key: &str, held: Hold) -> Result<(), LockError> {
        let Hold(owner) = held;
        let mut conn = self.0.conn().await.map_err(floor_error)?;
        sqlx::query("UPDATE lockkit_bench_floor SET owner = NULL, expires_at = '-infinity' WHERE name = $1 AND owner = $2")
            .bind(key)
            .bind(&owner)
            .execute(&mut *conn)
            .await
            .map_err(floor_error)?;
        conn.done();
        Ok(())
    }
}
