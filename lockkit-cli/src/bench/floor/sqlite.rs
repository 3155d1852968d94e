//! The SQLite floor: an upsert with `RETURNING` that takes the row when it is free or
//! expired, then a releasing `UPDATE`, on the same file and pool settings as lockkit.

use std::time::Duration;

use lockkit::LockError;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use super::{Hold, RawLock, floor_error};

/// What the SQLite floor sends.
pub(super) const DESCRIPTION: &str =
    "raw upsert ... RETURNING + UPDATE via sqlx, same file and pool settings";

const FLOOR_TABLE_SQLITE: &str = "CREATE TABLE IF NOT EXISTS lockkit_bench_floor (name TEXT PRIMARY KEY NOT NULL, owner TEXT, fence INTEGER NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID";

/// A SQLite floor client: a pool of its own on the database file.
pub(crate) struct SqliteFloor(SqlitePool);

impl SqliteFloor {
    /// A client for a `sqlite://` URL, with the floor's table; `None` when `url` is
    /// not a SQLite URL with a file path.
    pub(super) async fn connect(url: &str) -> Result<Option<Self>, LockError> {
        let Ok(opts) = lockkit::sqlite::SqliteOptions::from_url(url) else {
            return Ok(None);
        };
        let Some(path) = opts.path() else {
            return Ok(None);
        };
        let connect = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(5));
        let pool = SqlitePoolOptions::new()
            .max_connections(2)
            .connect_with(connect)
            .await
            .map_err(|e| LockError::connection("sqlite", e))?;
        sqlx::query(FLOOR_TABLE_SQLITE)
            .execute(&pool)
            .await
            .map_err(|e| LockError::backend("sqlite", e))?;
        Ok(Some(Self(pool)))
    }
}

impl RawLock for SqliteFloor {
    async fn clean_up(&self, _keys: &[String]) {
        clean_floor_table!(&self.0)
    }

    async fn try_acquire(&self, key: &str, owner: &str) -> Result<Option<Hold>, LockError> {
        let fence: Option<i64> = sqlx::query_scalar(
            "INSERT INTO lockkit_bench_floor (name, owner, fence, expires_at) VALUES (?1, ?2, 1, ?3)
             ON CONFLICT(name) DO UPDATE SET fence = fence + 1, owner = excluded.owner, expires_at = excluded.expires_at
             WHERE owner IS NULL OR expires_at <= ?4 RETURNING fence",
        )
        .bind(key)
        .bind(owner)
        .bind(i64::MAX / 4)
        .bind(0i64)
        .fetch_optional(&self.0)
        .await
        .map_err(floor_error)?;
        Ok(fence.map(|_| Hold(owner.to_owned())))
    }

    async fn release(&self, key: &str, held: Hold) -> Result<(), LockError> {
        let Hold(owner) = held;
        sqlx::query("UPDATE lockkit_bench_floor SET owner = NULL, expires_at = 0 WHERE name = ?1 AND owner = ?2 AND expires_at > ?3")
            .bind(key)
            .bind(&owner)
            .bind(0i64)
            .execute(&self.0)
            .await
            .map_err(floor_error)?;
        Ok(())
    }
}
