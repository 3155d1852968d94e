//! PgBouncer (Debian's `pgbouncer`) in front of a throwaway PostgreSQL: the
//! connection pooler most production PostgreSQL sits behind.

use std::ops::{Deref, DerefMut};
use std::time::Duration;

use tempfile::TempDir;

use crate::postgres::{Postgres, user_ids};
use crate::process::{Server, Spec, find_binary, probe_command};
use crate::scratch_dir::temp_dir;
use crate::{TestkitError, free_port};

/// How PgBouncer hands out server connections (its `pool_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PoolMode {
    /// A server connection per client connection, for as long as it lasts.
    Session,
    /// A server connection per transaction (each statement outside one): the
    /// usual mode, in which session state (prepared statements, `LISTEN`,
    /// session advisory locks, `SET`) belongs to whoever uses the server next.
    Transaction,
}

/// PgBouncer on 127.0.0.1 in front of its own PostgreSQL, run as the `postgres`
/// user (it refuses root), with its defaults but for the pool mode and the
/// pool sizes the tests need. [`url`](Self::url) goes through PgBouncer;
/// [`postgres`](Self::postgres) is the server behind it.
#[derive(Debug)]
pub struct PgBouncer {
    server: Server,
    postgres: Postgres,
    _dir: TempDir,
}

impl PgBouncer {
    /// Starts a PostgreSQL server and PgBouncer in front of it, in `mode`.
    ///
    /// # Errors
    ///
    /// [`TestkitError::NotFound`] if PgBouncer or PostgreSQL is not installed;
    /// `NotReady` with the log's tail if either does not come up.
    pub async fn start(mode: PoolMode) -> Result<Self, TestkitError> {
        Self::start_with_settings(mode, &[]).await
    }

    /// [`start`](Self::start), with `settings` on PostgreSQL's command line
    /// (as [`Postgres::start_with_settings`]).
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub async fn start_with_settings(
        mode: PoolMode,
        settings: &[&str],
    ) -> Result<Self, TestkitError> {
        let postgres = Postgres::start_with_settings(settings).await?;
        let binary = find_binary("pgbouncer", "LOCKKIT_PGBOUNCER_BIN")?;
        let (uid, gid) = user_ids("postgres")?;
        let dir = temp_dir()?;
        std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))?;
        let port = free_port()?;
        let mode = match mode {
            PoolMode::Session => "session",
            PoolMode::Transaction => "transaction",
        };
        let users = dir.path().join("users.txt");
        std::fs::write(&users, "\"postgres\" \"\"\n")?;
        let ini = dir.path().join("pgbouncer.ini");
        // Pools big enough for the conformance suite's drivers; every other
        // setting is PgBouncer's default.
        std::fs::write(
            &ini,
            format!(
                "[databases]\n* = host=127.0.0.1 port={pg}\n\n\
                 [pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\n\
                 unix_socket_dir =\nauth_type = trust\nauth_file = {users}\n\
                 pool_mode = {mode}\nmax_client_conn = 2000\ndefault_pool_size = 60\n",
                pg = postgres.port(),
                users = users.display(),
            ),
        )?;
        for file in [&users, &ini] {
            std::os::unix::fs::chown(file, Some(uid), Some(gid))?;
        }
        let server = Server::spawn(Spec {
            binary,
            args: vec![ini.display().to_string()],
            uid_gid: Some((uid, gid)),
            port,
            log: dir.path().join("pgbouncer.log"),
            ready_timeout: Duration::from_secs(30),
        })?;
        let mut bouncer = Self {
            server,
            postgres,
            _dir: dir,
        };
        let isready = bouncer.postgres.bin_dir().join("pg_isready");
        bouncer
            .server
            .wait_ready(|port| {
                let mut cmd = tokio::process::Command::new(&isready);
                cmd.args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres"]);
                probe_command(cmd)
            })
            .await?;
        Ok(bouncer)
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres`, through PgBouncer.
    pub fn url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/postgres",
            self.server.port()
        )
    }

    /// The PostgreSQL server behind PgBouncer.
    pub fn postgres(&self) -> &Postgres {
        &self.postgres
    }
}

impl Deref for PgBouncer {
    type Target = Server;
    fn deref(&self) -> &Server {
        &self.server
    }
}

impl DerefMut for PgBouncer {
    fn deref_mut(&mut self) -> &mut Server {
        &mut self.server
    }
}
