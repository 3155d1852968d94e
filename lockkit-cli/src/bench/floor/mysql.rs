//! The MySQL/MariaDB floor: an `UPDATE` with `LAST_INSERT_ID(fence + 1)`, then a
//! releasing `UPDATE` (the rows are inserted once, by [`RawLock::prepare`]).

use lockkit::LockError;

use super::held::Held;
use super::{Hold, RawLock, floor_error};

/// What the MySQL floor sends.
pub(super) const DESCRIPTION: &str =
    "raw UPDATE … LAST_INSERT_ID(fence + 1) + UPDATE via sqlx on a held connection, same server";

const FLOOR_TABLE_MY: &str = "CREATE TABLE IF NOT EXISTS lockkit_bench_floor (name VARCHAR(64) PRIMARY KEY, owner CHAR(32), fence BIGINT NOT NULL, expires_at DATETIME(6) NOT NULL) ENGINE=InnoDB";

/// A MySQL/MariaDB floor client: connections of its own, held.
pub(crate) struct MySqlFloor(Held<sqlx::MySql>);

impl MySqlFloor {
    /// A client for a `mysql://` or `mariadb://` URL (query options dropped), with the
    /// floor's table.
    pub(super) async fn connect(url: &str) -> Result<Self, LockError> {
        let url = url.replacen("mariadb://", "mysql://", 1);
        let (url, _) = url.split_once('?').unwrap_or((&url, ""));
        let pool = sqlx::mysql::MySqlPoolOptions::new()
            .max_connections(2)
            // No ping before each statement, as lockkit's pools (a raw client
            // would not send one either).
            .test_before_acquire(false)
            .connect(url)
            .await
            .map_err(|e| LockError::connection("mysql", e))?;
        sqlx::query(FLOOR_TABLE_MY)
            .execute(&pool)
            .await
            .map_err(floor_error)?;
        Ok(Self(Held::new(pool)))
    }
}

impl RawLock for MySqlFloor {
    async fn prepare(&self, keys: &[String]) -> Result<(), LockError> {
        for chunk in keys.chunks(500) {
            let mut q = sqlx::QueryBuilder::<sqlx::MySql>::new(
                "INSERT IGNORE INTO lockkit_bench_floor (name, owner, fence, expires_at) ",
            );
            q.push_values(chunk, |mut row, key| {
                row.push_bind(key).push("NULL").push("0").push("NOW(6)");
            });
            q.build()
                .execute(self.0.pool())
                .await
                .map_err(floor_error)?;
        }
        Ok(())
    }

    async fn clean_up(&self, _keys: &[String]) {
        clean_floor_table!(self.0.pool())
    }

    async fn try_acquire(&self, key: &str, owner: &str) -> Result<Option<Hold>, LockError> {
        let mut conn = self.0.conn().await.map_err(floor_error)?;
        let done = sqlx::query(
            "UPDATE lockkit_bench_floor SET fence = LAST_INSERT_ID(fence + 1), owner = ?, expires_at = NOW(6) + INTERVAL 30 SECOND
             WHERE name = ? AND (owner IS NULL OR expires_at <= NOW(6))",
        )
        .bind(owner)
        .bind(key)
        .execute(&mut *conn)
        .await
        .map_err(floor_error)?;
        conn.done();
        Ok((done.rows_affected() == 1).then(|| Hold(owner.to_owned())))
    }

    async fn release(&self, key: &str, held: Hold) -> Result<(), LockError> {
        let Hold(owner) = held;
        let mut conn = self.0.conn().await.map_err(floor_error)?;
        sqlx::query("UPDATE lockkit_bench_floor SET owner = NULL WHERE name = ? AND owner = ?")
            .bind(key)
            .bind(&owner)
            .execute(&mut *conn)
            .await
            .map_err(floor_error)?;
        conn.done();
        Ok(())
    }
}
