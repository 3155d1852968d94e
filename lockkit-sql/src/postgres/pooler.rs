//! Whether a transaction-mode pooler (PgBouncer's `pool_mode=transaction`)
//! stands between lockkit and PostgreSQL (invariant P4). Behind one, a client
//! connection runs each transaction on whichever server connection is free:
//! session state (prepared statements, `LISTEN`, session advisory locks) is
//! shared with every other client of the pooler.

use sqlx::postgres::PgPool;
use sqlx::{AssertSqlSafe, Row};

use crate::table::ServerSettings;

/// How many times the probe looks.
const LOOKS: usize = 3;

/// Whether statements on `pool` go through a transaction-mode pooler: as the
/// settings say (`pooler=transaction`), or as the probe finds. On two of the
/// pool's connections at once, the first asks its server process's id, then
/// the second asks its own inside a transaction, then the first asks again.
/// Connected to PostgreSQL itself, a connection is one server process for its
/// whole life and two connections are two processes: the first's id stays the
/// same, and the second's differs from it, always. Through a transaction-mode
/// pooler, either the second gets the server connection the first has just
/// given back (PgBouncer reuses the last one freed), or the first moves to
/// another (`server_round_robin`): either is proof. Missed only when other
/// clients' transactions land between the three at every look; then
/// `pooler=transaction` says it. Plain text statements, which any pooler passes.
pub(super) async fn transaction_pooler(
    pool: &PgPool,
    settings: &ServerSettings,
) -> Result<bool, sqlx::Error> {
    if settings.transaction_pooler {
        return Ok(true);
    }
    if pool.options().get_max_connections() < 2 {
        return Ok(false);
    }
    let (mut first, mut second) = (pool.acquire().await?, pool.acquire().await?);
    for _ in 0..LOOKS {
        let before = backend_pid(&mut first, "SELECT pg_backend_pid()").await?;
        let other = backend_pid(&mut second, "BEGIN; SELECT pg_backend_pid(); ROLLBACK").await?;
        let after = backend_pid(&mut first, "SELECT pg_backend_pid()").await?;
        if other == before || after != before {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The server process id that `sql` (plain text; its one row) reports.
async fn backend_pid(
    conn: &mut sqlx::PgConnection,
    sql: &'static str,
) -> Result<Option<i32>, sqlx::Error> {
    let rows = sqlx::raw_sql(AssertSqlSafe(sql)).fetch_all(conn).await?;
    rows.first().map(|row| row.try_get(0)).transpose()
}

/// Why a session-bound mode is refused behind a transaction-mode pooler.
pub(super) const NO_SESSIONS: &str = "mode=advisory holds each lock in a database session, and a \
     transaction-mode pooler (PgBouncer's pool_mode=transaction) shares sessions between its \
     clients: another client would hold our lock too, and our release would miss it. Connect \
     to PostgreSQL itself, or through PgBouncer with pool_mode=session, or use the lease mode \
     (the default), which works through the pooler";
