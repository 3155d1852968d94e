//! Whether a transaction-mode pooler (PgBouncer's `pool_mode=transaction`)
//! stands between lockkit and PostgreSQL (invariant P4). Behind one, a client
//! connection runs each transaction on whichever server connection is free:
//! session state (prepared statements, `LISTEN`, session advisory locks) is
//! shared with every other client of the pooler.
//!
//! When the URL does not say (`pooler=transaction` or `pooler=none`), connecting
//! looks, and in doubt takes the side that is safe behind a pooler.

use sqlx::postgres::{PgConnection, PgPool};
use sqlx::{AssertSqlSafe, Connection, Row};

use crate::table::{Pooler, ServerSettings};

/// How many times the probe looks.
const LOOKS: usize = 3;

/// Whether statements on `pool` may go through a transaction-mode pooler: as
/// the settings say, or else as connecting finds.
///
/// 1. **Another port.** The server listens on another port than the one
///    lockkit connects to (`inet_server_port()`): something stands between,
///    a pooler, a proxy or a container's port mapping. Taken for a pooler;
///    `pooler=none` says it is not one.
/// 2. **Two connections at once**: the first asks its server process's id,
///    then the second asks its own inside a transaction, then the first asks
///    again. Connected to PostgreSQL itself (or through a pooler in session
///    mode), a connection is one server process for its whole life, and two
///    connections are two processes: the first's id stays the same and the
///    second's differs. Through a transaction-mode pooler, either the second
///    gets the server connection the first just gave back (PgBouncer reuses the
///    last one freed), or the first moves to another (`server_round_robin`).
///    A pooler on the server's own port, busy with other clients' transactions
///    between the three questions at every look, can still be missed: say
///    `pooler=transaction`.
///
/// Plain text statements, which any pooler passes.
pub(super) async fn transaction_pooler(
    pool: &PgPool,
    settings: &ServerSettings,
) -> Result<bool, sqlx::Error> {
    match settings.pooler {
        Pooler::Transaction => return Ok(true),
        Pooler::None => return Ok(false),
        Pooler::Detect => {}
    }
    let mut first = pool.acquire().await?;
    let port = pool.connect_options().get_port();
    let listens: Option<i32> = one(&mut first, "SELECT inet_server_port()").await?;
    if listens.is_some_and(|listens| i64::from(listens) != i64::from(port)) {
        tracing::info!(
            port,
            server_port = listens,
            "PostgreSQL listens on another port than the URL's: something stands between \
             (a pooler, a proxy, a port mapping); taken for a transaction-mode pooler, unless \
             the URL says pooler=none"
        );
        return Ok(true);
    }
    // A second connection at once: the pool's, or one of its own.
    let (mut pooled, mut own);
    let second: &mut PgConnection = if pool.options().get_max_connections() >= 2 {
        pooled = pool.acquire().await?;
        &mut pooled
    } else {
        own = PgConnection::connect_with(&pool.connect_options()).await?;
        &mut own
    };
    for _ in 0..LOOKS {
        let before: Option<i32> = one(&mut first, "SELECT pg_backend_pid()").await?;
        let other: Option<i32> = one(second, "BEGIN; SELECT pg_backend_pid(); ROLLBACK").await?;
        let after: Option<i32> = one(&mut first, "SELECT pg_backend_pid()").await?;
        if other == before || after != before {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The first column of the one row that `sql` (plain text) returns.
async fn one(conn: &mut PgConnection, sql: &'static str) -> Result<Option<i32>, sqlx::Error> {
    let rows = sqlx::raw_sql(AssertSqlSafe(sql)).fetch_all(conn).await?;
    rows.first().map(|row| row.try_get(0)).transpose()
}

/// Why a session-bound mode is refused behind a transaction-mode pooler.
pub(super) const NO_SESSIONS: &str = "mode=advisory holds each lock in a database session, and a \
     transaction-mode pooler (PgBouncer's pool_mode=transaction) shares sessions between its \
     clients: another client would hold our lock too, and our release would miss it. Connect \
     to PostgreSQL itself, or through PgBouncer with pool_mode=session, or use the lease mode \
     (the default), which works through the pooler. (Found because PostgreSQL listens on \
     another port than the URL's, or its sessions move between connections; if nothing between \
     shares sessions, a port mapping or a TCP proxy, say pooler=none in the URL)";
