//! MariaDB (`mysql://`), with an empty root password and a `lockkit` database.

use std::ops::{Deref, DerefMut};
use std::process::Command;
use std::time::Duration;

use tempfile::TempDir;

use crate::process::{Server, Spec, find_binary, probe_command, run_setup, temp_dir};
use crate::{TestkitError, free_port};

/// A throwaway MariaDB server on 127.0.0.1, with
/// `innodb_flush_log_at_trx_commit=2`: a commit survives a SIGKILL of the server
/// (written to the OS at commit), not a power loss.
#[derive(Debug)]
pub struct MariaDb {
    server: Server,
    _dir: TempDir,
}

impl MariaDb {
    /// Runs mariadb-install-db in a temp dir, starts the server and creates the
    /// `lockkit` database.
    ///
    /// # Errors
    ///
    /// [`TestkitError::NotFound`] if MariaDB is not installed; `NotReady` with the
    /// log's tail if it does not come up.
    pub async fn start() -> Result<Self, TestkitError> {
        let mariadbd = find_binary("mariadbd", "LOCKKIT_MARIADB_BIN")?;
        let install = find_binary("mariadb-install-db", "LOCKKIT_MARIADB_INSTALL_BIN")?;
        let dir = temp_dir()?;
        let data = dir.path().join("data");
        // A private tmpdir: parallel installs collide on temp tables in /tmp.
        let tmp = dir.path().join("tmp");
        std::fs::create_dir_all(&tmp)?;
        run_setup(
            "mariadb-install-db",
            Command::new(install).env("TMPDIR", &tmp).args([
                "--no-defaults",
                &format!("--datadir={}", data.display()),
                "--user=root",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                "--skip-name-resolve",
                &format!("--tmpdir={}", tmp.display()),
            ]),
        )?;
        let port = free_port()?;
        let d = dir.path().display().to_string();
        let args = vec![
            "--no-defaults".to_string(),
            format!("--datadir={}", data.display()),
            format!("--socket={d}/mysqld.sock"),
            format!("--port={port}"),
            "--bind-address=127.0.0.1".into(),
            "--user=root".into(),
            format!("--pid-file={d}/mysqld.pid"),
            format!("--log-error={d}/error.log"),
            "--skip-name-resolve".into(),
            format!("--tmpdir={}", tmp.display()),
            "--innodb-buffer-pool-size=64M".into(),
            "--innodb-flush-log-at-trx-commit=2".into(),
            "--skip-log-bin".into(),
            "--max-connections=300".into(),
        ];
        let server = Server::spawn(Spec {
            binary: mariadbd,
            args,
            uid_gid: None,
            port,
            log: dir.path().join("error.log"),
            ready_timeout: Duration::from_secs(30),
        })?;
        let mut db = Self { server, _dir: dir };
        db.wait_ready().await?;
        let client = find_binary("mariadb", "LOCKKIT_MARIADB_CLIENT")?;
        run_setup(
            "CREATE DATABASE lockkit",
            Command::new(client).args([
                "--protocol=tcp",
                "-h",
                "127.0.0.1",
                "-P",
                &port.to_string(),
                "-u",
                "root",
                "-e",
                "CREATE DATABASE IF NOT EXISTS lockkit",
            ]),
        )?;
        Ok(db)
    }

    async fn wait_ready(&mut self) -> Result<(), TestkitError> {
        let admin = find_binary("mariadb-admin", "LOCKKIT_MARIADB_ADMIN")?;
        self.server
            .wait_ready(|port| {
                let mut cmd = tokio::process::Command::new(&admin);
                cmd.args([
                    "--protocol=tcp",
                    "-h",
                    "127.0.0.1",
                    "-P",
                    &port.to_string(),
                    "-u",
                    "root",
                    "ping",
                ]);
                probe_command(cmd)
            })
            .await
    }

    /// `mysql://root@127.0.0.1:PORT/lockkit`.
    pub fn url(&self) -> String {
        format!("mysql://root@127.0.0.1:{}/lockkit", self.server.port())
    }

    /// Starts the server again on the same data dir and port, and waits for it.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub async fn restart(&mut self) -> Result<(), TestkitError> {
        self.server.respawn()?;
        self.wait_ready().await
    }
}

impl Deref for MariaDb {
    type Target = Server;
    fn deref(&self) -> &Server {
        &self.server
    }
}

impl DerefMut for MariaDb {
    fn deref_mut(&mut self) -> &mut Server {
        &mut self.server
    }
}
