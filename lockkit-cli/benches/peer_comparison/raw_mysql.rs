//! The MariaDB hand-off floor: what the server's own primitives cost for one
//! hand-off, with nothing of lockkit's on the way (`participant raw-mysql-bell
//! URL …`). Each client is one connection. A holder holds the key's bell
//! (`GET_LOCK`) for as long as it holds the lock; a waiter blocks in `GET_LOCK` on
//! the bell and, once it has it, takes the lock with one committed write that
//! returns a token (`LAST_INSERT_ID(fence + 1)`), as a grant must. A release
//! writes the row free, then `RELEASE_LOCK` hands the bell to the waiter that
//! asked first. So a hand-off is one wake-up and one committed write: the least
//! any design that keeps its grants in a table can do on this server.

use std::sync::Arc;

use sqlx::{Connection, MySqlConnection};
use tokio::sync::Mutex;

use crate::backend::Failure;

/// The longest a waiter blocks on the bell, s.
const WAIT_S: u32 = 30;

/// One client: one connection.
#[derive(Clone)]
pub(crate) struct RawMySql {
    conn: Arc<Mutex<MySqlConnection>>,
}

impl RawMySql {
    pub(crate) async fn connect(url: &str) -> Result<Self, Failure> {
        let mut conn = MySqlConnection::connect(url).await?;
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS lockkit_bench_floor (name VARCHAR(255) PRIMARY KEY, \
             owner BIGINT NULL, fence BIGINT NOT NULL) ENGINE=InnoDB",
        )
        .execute(&mut conn)
        .await?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// Blocks on `key`'s bell, then takes the lock.
    pub(crate) async fn acquire(&self, key: &str) -> Result<(), Failure> {
        let mut conn = self.conn.lock().await;
        let got: Option<i64> =
            sqlx::query_scalar("SELECT GET_LOCK(CONCAT('lockkit-bench-floor:', ?), ?)")
                .bind(key)
                .bind(WAIT_S)
                .fetch_one(&mut *conn)
                .await?;
        if got != Some(1) {
            return Err(format!("no bell for {key} within {WAIT_S} s").into());
        }
        sqlx::query(
            "INSERT INTO lockkit_bench_floor (name, owner, fence) \
             VALUES (?, CONNECTION_ID(), LAST_INSERT_ID(1)) \
             ON DUPLICATE KEY UPDATE owner = CONNECTION_ID(), fence = LAST_INSERT_ID(fence + 1)",
        )
        .bind(key)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    /// Frees the lock, then rings the bell.
    pub(crate) async fn release(&self, key: &str) -> Result<(), Failure> {
        let mut conn = self.conn.lock().await;
        sqlx::query(
            "UPDATE lockkit_bench_floor SET owner = NULL WHERE name = ? AND owner = CONNECTION_ID()",
        )
        .bind(key)
        .execute(&mut *conn)
        .await?;
        sqlx::query("DO RELEASE_LOCK(CONCAT('lockkit-bench-floor:', ?))")
            .bind(key)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }
}
