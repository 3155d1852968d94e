//! The servers of the run: pinned to the servers' CPU, PostgreSQL made to count
//! its statements, and each server's version for the report.

use lockkit_testkit::Postgres;

use crate::backend::{self, Backend, Failure};
use crate::machine;

/// Puts a server on the servers' CPU (see [`machine::SERVER_CPU`]).
pub(crate) fn pin_server(pid: Option<u32>) {
    if let Some(pid) = pid {
        machine::pin(pid, machine::SERVER_CPU);
    }
}

/// `pg` with `pg_stat_statements` loaded, which counts every statement the
/// moment it ends: what [`Backend::commands`] reads. It must be preloaded:
/// `ALTER SYSTEM`, a restart, then `CREATE EXTENSION`.
pub(crate) async fn counting_statements(mut pg: Postgres) -> Result<Postgres, Failure> {
    let run = |statement: &'static str, url: String| async move {
        let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&url).await?;
        sqlx::query(statement).execute(&mut conn).await?;
        Ok::<_, Failure>(())
    };
    run(
        "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'",
        pg.url(),
    )
    .await?;
    pg.restart().await?;
    run(
        "CREATE EXTENSION IF NOT EXISTS pg_stat_statements",
        pg.url(),
    )
    .await?;
    Ok(pg)
}

/// [`pin_server`] for a server that forks processes of its own (PostgreSQL):
/// the process and its children now.
pub(crate) fn pin_server_and_children(pid: Option<u32>) {
    let Some(pid) = pid else { return };
    pin_server(Some(pid));
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"));
    for child in children.unwrap_or_default().split_whitespace() {
        pin_server(child.parse().ok());
    }
}

/// The first line `program ARGS` prints, or why not.
pub(crate) async fn version(program: &str, args: &[&str]) -> String {
    match tokio::process::Command::new(program)
        .args(args)
        .output()
        .await
    {
        Ok(out) => String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned(),
        Err(e) => format!("{program}: {e}"),
    }
}

pub(crate) async fn zk_version(backend: &Backend) -> String {
    let Backend::ZooKeeper(address) = backend else {
        return String::new();
    };
    backend::four_letter_word(address, "srvr")
        .await
        .ok()
        .and_then(|s| s.lines().next().map(str::to_owned))
        .unwrap_or_else(|| format!("ZooKeeper at {address}"))
}
