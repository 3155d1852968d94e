//! MariaDB (`mysql://`), with an empty root password and a `lockkit` database.

use std::ops::{Deref, DerefMut};
use std::process::Command;
use std::time::Duration;

use tempfile::TempDir;

use crate::process::{Server, Spec, find_binary, probe_command, run_setup};
use crate::scratch_dir::temp_dir;
use crate::template::{copy, template};
use crate::tls::{CertAuthority, query_path};
use crate::{TestkitError, free_port};

/// A throwaway MariaDB server on 127.0.0.1, with
/// `innodb_flush_log_at_trx_commit=2`: a commit survives a SIGKILL of the server
/// (written to the OS at commit), not a power loss.
#[derive(Debug)]
pub struct MariaDb {
    server: Server,
    /// TLS: the certificates, and whether clients must present one.
    tls: Option<(CertAuthority, bool)>,
    _dir: TempDir,
}

/// How `mariadb-install-db` makes the data directory (once per machine: see
/// [`template`]), besides the directories it is given.
const INSTALL_ARGS: [&str; 5] = [
    "--no-defaults",
    "--user=root",
    "--auth-root-authentication-method=normal",
    "--skip-test-db",
    "--skip-name-resolve",
];

/// Server settings real deployments run with, under which lockkit's promises
/// must hold (see [`MariaDb::start_with_settings`]): latin1, MariaDB's built-in
/// default character set (explicit here); a `sql_mode` that changes how
/// statements read (assignments made at once, `"` quoting identifiers, `||`
/// concatenating, `\` taken literally, strict `GROUP BY`) on top of the
/// default; SERIALIZABLE transactions; and statement-based binary logging.
pub const HOSTILE_SETTINGS: &[&str] = &[
    "--character-set-server=latin1",
    "--collation-server=latin1_swedish_ci",
    "--sql-mode=STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,\
     NO_ENGINE_SUBSTITUTION,SIMULTANEOUS_ASSIGNMENT,ANSI_QUOTES,PIPES_AS_CONCAT,\
     NO_BACKSLASH_ESCAPES,ONLY_FULL_GROUP_BY",
    "--transaction-isolation=SERIALIZABLE",
    "--log-bin",
    "--binlog-format=STATEMENT",
    "--server-id=1",
];

impl MariaDb {
    /// Starts a server on a copy of a data directory `mariadb-install-db` made
    /// (once per machine: see the `template` module), and creates the `lockkit`
    /// database.
    ///
    /// # Errors
    ///
    /// [`TestkitError::NotFound`] if MariaDB is not installed; `NotReady` with the
    /// log's tail if it does not come up.
    pub async fn start() -> Result<Self, TestkitError> {
        Self::start_with(None, &[]).await
    }

    /// As [`start`](Self::start), with `settings` added to the server's command
    /// line: the settings real deployments run with, for the tests that must
    /// hold under them (`--character-set-server=latin1`, `--sql-mode=…`,
    /// `--transaction-isolation=SERIALIZABLE`, `--log-bin
    /// --binlog-format=STATEMENT`: binary logging is off unless they turn it on).
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub async fn start_with_settings(settings: &[&str]) -> Result<Self, TestkitError> {
        Self::start_with(None, settings).await
    }

    /// Starts a server that accepts TLS connections only
    /// (`require_secure_transport=ON`), with a certificate for `IP:127.0.0.1`
    /// from a throwaway CA. [`url`](Self::url) asks for `ssl-mode=VERIFY_IDENTITY`
    /// against that CA.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start); `NotFound` or `Setup` from `openssl`.
    pub async fn start_tls() -> Result<Self, TestkitError> {
        Self::start_with(Some(false), &[]).await
    }

    /// As [`start_tls`](Self::start_tls), but `root` must also present a client
    /// certificate signed by the CA (`REQUIRE X509`); [`url`](Self::url) carries
    /// `ssl-cert` and `ssl-key`.
    ///
    /// # Errors
    ///
    /// As [`start_tls`](Self::start_tls).
    pub async fn start_mutual_tls() -> Result<Self, TestkitError> {
        Self::start_with(Some(true), &[]).await
    }

    async fn start_with(mutual: Option<bool>, settings: &[&str]) -> Result<Self, TestkitError> {
        let mariadbd = find_binary("mariadbd", "LOCKKIT_MARIADB_BIN")?;
        let install = find_binary("mariadb-install-db", "LOCKKIT_MARIADB_INSTALL_BIN")?;
        let dir = temp_dir()?;
        let data = dir.path().join("data");
        // A private tmpdir: parallel servers collide on temp tables in /tmp.
        let tmp = dir.path().join("tmp");
        std::fs::create_dir_all(&tmp)?;
        let made = template(
            "mariadb",
            &[&install, &mariadbd],
            &INSTALL_ARGS,
            |staging| {
                let tmp = staging.join("tmp");
                std::fs::create_dir_all(&tmp)?;
                run_setup(
                    "mariadb-install-db",
                    Command::new(&install)
                        .env("TMPDIR", &tmp)
                        .args(INSTALL_ARGS)
                        .arg(format!("--datadir={}", staging.join("data").display()))
                        .arg(format!("--tmpdir={}", tmp.display())),
                )
            },
        )?;
        copy(&made.join("data"), &data)?;
        let tls = match mutual {
            Some(mutual) => Some((CertAuthority::generate(dir.path())?, mutual)),
            None => None,
        };
        let port = free_port()?;
        let d = dir.path().display().to_string();
        let mut args = vec![
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
            "--max-connections=300".into(),
        ];
        if !settings.iter().any(|s| s.starts_with("--log-bin")) {
            args.push("--skip-log-bin".into());
        }
        args.extend(settings.iter().map(|s| s.to_string()));
        if let Some((certs, _)) = &tls {
            args.extend([
                format!("--ssl-ca={}", certs.ca.display()),
                format!("--ssl-cert={}", certs.server_cert.display()),
                format!("--ssl-key={}", certs.server_key.display()),
                "--require-secure-transport=ON".into(),
            ]);
        }
        let server = Server::spawn(Spec {
            binary: mariadbd,
            args,
            uid_gid: None,
            port,
            log: dir.path().join("error.log"),
            ready_timeout: Duration::from_secs(30),
        })?;
        let mut db = Self {
            server,
            tls,
            _dir: dir,
        };
        db.wait_ready().await?;
        // Through the socket: it counts as secure transport, and needs no
        // certificate.
        let mut setup = "CREATE DATABASE IF NOT EXISTS lockkit;".to_string();
        if mutual == Some(true) {
            setup.push_str(
                "ALTER USER 'root'@'127.0.0.1' REQUIRE X509; \
                 ALTER USER 'root'@'localhost' REQUIRE X509;",
            );
        }
        let client = find_binary("mariadb", "LOCKKIT_MARIADB_CLIENT")?;
        run_setup(
            "CREATE DATABASE lockkit",
            Command::new(client).args([
                &format!("--socket={d}/mysqld.sock"),
                "-u",
                "root",
                "-e",
                &setup,
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

    /// The server's error log so far (its warnings: MariaDB logs a statement
    /// that is unsafe for statement-based binary logging there).
    ///
    /// # Errors
    ///
    /// [`TestkitError::Io`] if the log cannot be read.
    pub fn error_log(&self) -> Result<String, TestkitError> {
        Ok(std::fs::read_to_string(self._dir.path().join("error.log"))?)
    }

    /// The `mariadb` client connected to the `lockkit` database as `root` (batch
    /// mode, no column names, flushed after each statement), as a foreign client
    /// for the interoperability tests. TLS servers are not covered.
    ///
    /// # Errors
    ///
    /// [`TestkitError::NotFound`] if the client is missing.
    pub fn client(&self) -> Result<tokio::process::Command, TestkitError> {
        let client = find_binary("mariadb", "LOCKKIT_MARIADB_CLIENT")?;
        let mut cmd = tokio::process::Command::new(client);
        cmd.args(["--no-defaults", "--protocol=tcp", "-h", "127.0.0.1", "-P"])
            .arg(self.server.port().to_string())
            .args([
                "-u",
                "root",
                "--batch",
                "--skip-column-names",
                "--unbuffered",
            ])
            .arg("lockkit");
        Ok(cmd)
    }

    /// `mysql://root@127.0.0.1:PORT/lockkit`; for a TLS server
    /// `…?ssl-mode=VERIFY_IDENTITY&ssl-ca=CA` (plus `ssl-cert` and `ssl-key` when it
    /// requires a client certificate).
    pub fn url(&self) -> String {
        let plain = self.plain_url();
        match &self.tls {
            None => plain,
            Some((certs, mutual)) => {
                let mut url = format!(
                    "{plain}?ssl-mode=VERIFY_IDENTITY&ssl-ca={}",
                    query_path(&certs.ca)
                );
                if *mutual {
                    url.push_str(&format!(
                        "&ssl-cert={}&ssl-key={}",
                        query_path(&certs.client_cert),
                        query_path(&certs.client_key)
                    ));
                }
                url
            }
        }
    }

    /// The URL without any TLS option (what a user who forgot TLS would write).
    pub fn plain_url(&self) -> String {
        format!("mysql://root@127.0.0.1:{}/lockkit", self.server.port())
    }

    /// The certificates of a TLS server.
    pub fn tls_files(&self) -> Option<&CertAuthority> {
        self.tls.as_ref().map(|(certs, _)| certs)
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
