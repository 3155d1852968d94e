//! The servers' own hand-off floors, MariaDB's and PostgreSQL's: what one
//! hand-off costs with the server's own primitives and nothing of lockkit's on
//! the way (`participant raw-mysql-bell URL …`, `raw-postgres-bell`). Each client
//! is one connection. A holder holds the key's bell for as long as it holds the
//! lock: `GET_LOCK` on MariaDB, a session advisory lock (`pg_advisory_lock`) on
//! PostgreSQL. A waiter blocks on the bell and, once it has it, takes the lock
//! with one committed write that returns a token (`fence + 1`), as a grant must.
//! A release writes the row free, then frees the bell, which the server hands to
//! the waiter that asked first. So a hand-off is one wake-up, inside the server,
//! and one committed write: the least any design that keeps its grants in a table
//! can do on that server.

use std::sync::Arc;

use sqlx::{
    Connection, Database, Encode, Executor, IntoArguments, MySqlConnection, PgConnection, Type,
};
use tokio::sync::Mutex;

use crate::backend::Failure;

/// One server's statements. Each but `create` binds the lock's name, once.
struct Statements {
    /// Makes the floor's table if missing.
    create: &'static str,
    /// Waits for the bell: a row once it is ours.
    take_bell: &'static str,
    /// Takes the lock, with the next token.
    take: &'static str,
    /// Frees the lock.
    free: &'static str,
    /// Frees the bell, for the next in line.
    pass_bell: &'static str,
}

const MYSQL: Statements = Statements {
    create: "CREATE TABLE IF NOT EXISTS lockkit_bench_floor (name VARCHAR(255) PRIMARY KEY, \
             owner BIGINT NULL, fence BIGINT NOT NULL) ENGINE=InnoDB",
    take_bell: "SELECT 1 FROM DUAL WHERE GET_LOCK(CONCAT('lockkit-bench-floor:', ?), 30) = 1",
    take: "INSERT INTO lockkit_bench_floor (name, owner, fence) \
           VALUES (?, CONNECTION_ID(), LAST_INSERT_ID(1)) \
           ON DUPLICATE KEY UPDATE owner = CONNECTION_ID(), fence = LAST_INSERT_ID(fence + 1)",
    free: "UPDATE lockkit_bench_floor SET owner = NULL WHERE name = ? AND owner = CONNECTION_ID()",
    pass_bell: "DO RELEASE_LOCK(CONCAT('lockkit-bench-floor:', ?))",
};

const POSTGRES: Statements = Statements {
    // A wait for the bell ends after 30 s, as GET_LOCK's does. The table is
    // made under a transaction-scoped advisory lock: clients connecting at
    // once would otherwise collide on the catalog.
    create: "SET lock_timeout = '30s'; \
             BEGIN; SELECT pg_advisory_xact_lock(hashtext('lockkit-bench-floor')); \
             CREATE TABLE IF NOT EXISTS lockkit_bench_floor \
             (name TEXT PRIMARY KEY, owner INT, fence BIGINT NOT NULL); COMMIT",
    take_bell: "SELECT 1 FROM (SELECT pg_advisory_lock(hashtext('lockkit-bench-floor:' || $1))) b",
    take: "INSERT INTO lockkit_bench_floor AS f (name, owner, fence) \
           VALUES ($1, pg_backend_pid(), 1) \
           ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, fence = f.fence + 1 \
           RETURNING fence",
    free: "UPDATE lockkit_bench_floor SET owner = NULL \
           WHERE name = $1 AND owner = pg_backend_pid()",
    pass_bell: "SELECT pg_advisory_unlock(hashtext('lockkit-bench-floor:' || $1))",
};

/// One client: one connection.
#[derive(Clone)]
pub(crate) enum RawBell {
    MySql(Arc<Mutex<MySqlConnection>>),
    Postgres(Arc<Mutex<PgConnection>>),
}

impl RawBell {
    pub(crate) async fn connect_mysql(url: &str) -> Result<Self, Failure> {
        let conn = connect::<sqlx::MySql>(url, &MYSQL).await?;
        Ok(Self::MySql(Arc::new(Mutex::new(conn))))
    }

    pub(crate) async fn connect_postgres(url: &str) -> Result<Self, Failure> {
        let conn = connect::<sqlx::Postgres>(url, &POSTGRES).await?;
        Ok(Self::Postgres(Arc::new(Mutex::new(conn))))
    }

    /// Blocks on `key`'s bell, then takes the lock.
    pub(crate) async fn acquire(&self, key: &str) -> Result<(), Failure> {
        self.run(|sql| [(sql.take_bell, true), (sql.take, false)], key)
            .await
    }

    /// Frees the lock, then the bell.
    pub(crate) async fn release(&self, key: &str) -> Result<(), Failure> {
        self.run(|sql| [(sql.free, false), (sql.pass_bell, false)], key)
            .await
    }

    /// Runs the two statements `pick` names, with `key`, on this client's server.
    async fn run(&self, pick: fn(&Statements) -> Steps, key: &str) -> Result<(), Failure> {
        match self {
            Self::MySql(conn) => {
                run_on::<sqlx::MySql>(&mut *conn.lock().await, pick(&MYSQL), key).await
            }
            Self::Postgres(conn) => {
                run_on::<sqlx::Postgres>(&mut *conn.lock().await, pick(&POSTGRES), key).await
            }
        }
    }
}

/// Statements to run in order, each with whether it must return a row (the
/// bell is ours).
type Steps = [(&'static str, bool); 2];

async fn connect<DB: Database>(url: &str, sql: &Statements) -> Result<DB::Connection, Failure>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    let mut conn = DB::Connection::connect(url).await?;
    sqlx::raw_sql(sql.create).execute(&mut conn).await?;
    Ok(conn)
}

/// Runs `steps` with `key`, in order.
async fn run_on<DB: Database>(
    conn: &mut DB::Connection,
    steps: Steps,
    key: &str,
) -> Result<(), Failure>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    DB::Arguments: IntoArguments<DB>,
{
    for (statement, must_return_a_row) in steps {
        let row = sqlx::query(statement)
            .bind(key)
            .fetch_optional(&mut *conn)
            .await?;
        if must_return_a_row && row.is_none() {
            return Err(format!("no bell for {key}: the server's wait for it ended").into());
        }
    }
    Ok(())
}
