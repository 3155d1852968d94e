//! The PostgreSQL hand-off floor: what the server's own primitives cost for one
//! hand-off, with nothing of lockkit's on the way (`participant raw-postgres-bell
//! URL …`). Each client is one connection. A holder holds the key's bell (a
//! session advisory lock, `pg_advisory_lock`) for as long as it holds the lock;
//! a waiter blocks in `pg_advisory_lock` on the bell and, once it has it, takes
//! the lock with one committed write that returns a token (`fence + 1`), as a
//! grant must. A release writes the row free, then `pg_advisory_unlock` hands
//! the bell to the waiter the server queued first. So a hand-off is one wake-up,
//! inside the server, and one committed write: the least any design that keeps
//! its grants in a table can do on this server.

use std::sync::Arc;

use sqlx::{Connection, PgConnection};
use tokio::sync::Mutex;

use crate::backend::Failure;

/// Takes the bell of the lock named `$1`, waiting for it.
const TAKE_BELL: &str = "SELECT pg_advisory_lock(hashtext('lockkit-bench-floor:' || $1))";
/// Gives the bell of the lock named `$1` to the next in line.
const PASS_BELL: &str = "SELECT pg_advisory_unlock(hashtext('lockkit-bench-floor:' || $1))";

/// One client: one connection.
#[derive(Clone)]
pub(crate) struct RawPostgres {
    conn: Arc<Mutex<PgConnection>>,
}

impl RawPostgres {
    pub(crate) async fn connect(url: &str) -> Result<Self, Failure> {
        let mut conn = PgConnection::connect(url).await?;
        // Under a transaction-scoped advisory lock: clients connecting at once
        // would otherwise collide on the catalog.
        sqlx::raw_sql(
            "BEGIN; SELECT pg_advisory_xact_lock(hashtext('lockkit-bench-floor')); \
             CREATE TABLE IF NOT EXISTS lockkit_bench_floor \
             (name TEXT PRIMARY KEY, owner INT, fence BIGINT NOT NULL); COMMIT",
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
        sqlx::query(TAKE_BELL).bind(key).execute(&mut *conn).await?;
        sqlx::query(
            "INSERT INTO lockkit_bench_floor AS f (name, owner, fence) \
             VALUES ($1, pg_backend_pid(), 1) \
             ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, fence = f.fence + 1 \
             RETURNING fence",
        )
        .bind(key)
        .fetch_one(&mut *conn)
        .await?;
        Ok(())
    }

    /// Frees the lock, then rings the bell.
    pub(crate) async fn release(&self, key: &str) -> Result<(), Failure> {
        let mut conn = self.conn.lock().await;
        sqlx::query(
            "UPDATE lockkit_bench_floor SET owner = NULL WHERE name = $1 AND owner = pg_backend_pid()",
        )
        .bind(key)
        .execute(&mut *conn)
        .await?;
        sqlx::query(PASS_BELL).bind(key).execute(&mut *conn).await?;
        Ok(())
    }
}
