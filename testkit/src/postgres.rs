//! PostgreSQL, run as the `postgres` user (it refuses root).

use std::ops::{Deref, DerefMut};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use tempfile::TempDir;

use crate::process::{Server, Spec, find_binary, probe_command, run_setup};
use crate::scratch_dir::many_files_dir;
use crate::template::{copy, template};
use crate::tls::{CertAuthority, query_path};
use crate::{TestkitError, free_port};

/// A throwaway PostgreSQL server on 127.0.0.1: trust auth, `fsync=off` (fast, not
/// power-loss safe) but `synchronous_commit=on`, so a commit survives a SIGKILL of
/// the server, as in production. Its directory is on the machine's tmpfs when
/// that has room (see `scratch_dir::many_files_dir`).
#[derive(Debug)]
pub struct Postgres {
    server: Server,
    bin: PathBuf,
    /// TLS: the certificates, and whether clients must present one.
    tls: Option<(CertAuthority, bool)>,
    _dir: TempDir,
}

fn bin_dir() -> Result<PathBuf, TestkitError> {
    if let Ok(dir) = std::env::var("LOCKKIT_POSTGRES_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|_| TestkitError::NotFound {
            binary: "postgres (/usr/lib/postgresql/*/bin)".into(),
        })?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("postgres").is_file())
        .collect();
    versions.sort();
    versions.pop().ok_or_else(|| TestkitError::NotFound {
        binary: "postgres (/usr/lib/postgresql/*/bin)".into(),
    })
}

/// How `initdb` makes the data directory (once per machine: see [`template`]).
const INITDB_ARGS: [&str; 8] = [
    "-A",
    "trust",
    "-U",
    "postgres",
    "-E",
    "UTF8",
    "--locale=C",
    "--no-sync",
];

/// The uid and gid of a system user, from /etc/passwd.
pub(crate) fn user_ids(name: &str) -> Result<(u32, u32), TestkitError> {
    let passwd = std::fs::read_to_string("/etc/passwd")?;
    passwd
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.len() > 3 && f[0] == name).then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
        })
        .next()
        .ok_or_else(|| TestkitError::NotFound {
            binary: format!("the `{name}` user (installed by the postgresql package)"),
        })
}

impl Postgres {
    /// Starts a server on a copy of a data directory `initdb` made (once per
    /// machine: see the `template` module).
    ///
    /// # Errors
    ///
    /// [`TestkitError::NotFound`] if PostgreSQL is not installed; `NotReady` with the
    /// log's tail if it does not come up.
    pub async fn start() -> Result<Self, TestkitError> {
        Self::start_with(None, &[]).await
    }

    /// As [`start`](Self::start), with each of `settings` (`name=value`) set on
    /// the server's command line (`-c`): the settings real deployments run
    /// with, for the tests that must hold under them
    /// (`default_transaction_isolation=serializable`, `idle_session_timeout=2s`).
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub async fn start_with_settings(settings: &[&str]) -> Result<Self, TestkitError> {
        Self::start_with(None, settings).await
    }

    /// Starts a server that accepts TLS connections only (`ssl=on`, and
    /// `pg_hba.conf` with `hostssl` lines alone), with a certificate for
    /// `IP:127.0.0.1` from a throwaway CA. [`url`](Self::url) asks for
    /// `sslmode=verify-full` against that CA.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start); `NotFound` or `Setup` from `openssl`.
    pub async fn start_tls() -> Result<Self, TestkitError> {
        Self::start_with(Some(false), &[]).await
    }

    /// As [`start_tls`](Self::start_tls), but clients must also present a
    /// certificate signed by the CA (`clientcert=verify-ca`); [`url`](Self::url)
    /// carries `sslcert` and `sslkey`.
    ///
    /// # Errors
    ///
    /// As [`start_tls`](Self::start_tls).
    pub async fn start_mutual_tls() -> Result<Self, TestkitError> {
        Self::start_with(Some(true), &[]).await
    }

    async fn start_with(mutual: Option<bool>, settings: &[&str]) -> Result<Self, TestkitError> {
        let bin = bin_dir()?;
        let _ = find_binary(
            &bin.join("postgres").display().to_string(),
            "LOCKKIT_POSTGRES_SERVER",
        )?;
        let (uid, gid) = user_ids("postgres")?;
        let dir = many_files_dir()?;
        std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))?;
        let data = dir.path().join("data");
        let initdb = bin.join("initdb");
        let owner = format!("{uid}:{gid}");
        let mut args = INITDB_ARGS.to_vec();
        args.push(&owner);
        let made = template("postgres", &[&initdb], &args, |staging| {
            std::os::unix::fs::chown(staging, Some(uid), Some(gid))?;
            run_setup(
                "initdb",
                Command::new(&initdb)
                    .arg("-D")
                    .arg(staging.join("data"))
                    .args(INITDB_ARGS)
                    .uid(uid)
                    .gid(gid),
            )
        })?;
        copy(&made.join("data"), &data)?;
        let tls = match mutual {
            Some(mutual) => {
                let certs = tls_only(dir.path(), &data, mutual, (uid, gid))?;
                Some((certs, mutual))
            }
            None => None,
        };
        let port = free_port()?;
        let log = dir.path().join("postgres.log");
        std::fs::File::create(&log)?;
        std::os::unix::fs::chown(&log, Some(uid), Some(gid))?;
        let args = [
            "-D",
            &data.display().to_string(),
            "-k",
            &dir.path().display().to_string(),
            "-p",
            &port.to_string(),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=on",
            "-c",
            "full_page_writes=off",
            // Room for a queue of 64 waiters, each a driver of its own with its
            // pool and its LISTEN connection (about three connections each).
            "-c",
            "max_connections=400",
            // Dynamic shared memory as files in the data directory, which goes
            // with the server: the default (`posix`) leaves a killed server's
            // segments in /dev/shm: about 900 files and 0.5 GB per run of the
            // suite, until the machine's memory runs out.
            "-c",
            "dynamic_shared_memory_type=mmap",
        ]
        .map(String::from)
        .to_vec();
        let mut args = args;
        for setting in settings {
            args.extend(["-c".to_string(), setting.to_string()]);
        }
        if let Some((certs, _)) = &tls {
            args.extend([
                "-c".into(),
                "ssl=on".into(),
                "-c".into(),
                format!("ssl_cert_file={}", certs.server_cert.display()),
                "-c".into(),
                format!("ssl_key_file={}", certs.server_key.display()),
                "-c".into(),
                format!("ssl_ca_file={}", certs.ca.display()),
            ]);
        }
        let server = Server::spawn(Spec {
            binary: bin.join("postgres"),
            args,
            uid_gid: Some((uid, gid)),
            port,
            log,
            ready_timeout: Duration::from_secs(30),
        })?
        .removing_sysv_shm_of(data.join("postmaster.pid"));
        let mut pg = Self {
            server,
            bin,
            tls,
            _dir: dir,
        };
        pg.wait_ready().await?;
        Ok(pg)
    }

    async fn wait_ready(&mut self) -> Result<(), TestkitError> {
        let isready = self.bin.join("pg_isready");
        self.server
            .wait_ready(|port| {
                let mut cmd = tokio::process::Command::new(&isready);
                cmd.args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres"]);
                probe_command(cmd)
            })
            .await
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres`; for a TLS server
    /// `…?sslmode=verify-full&sslrootcert=CA` (plus `sslcert` and `sslkey` when it
    /// requires a client certificate).
    pub fn url(&self) -> String {
        let plain = self.plain_url();
        match &self.tls {
            None => plain,
            Some((certs, mutual)) => {
                let mut url = format!(
                    "{plain}?sslmode=verify-full&sslrootcert={}",
                    query_path(&certs.ca)
                );
                if *mutual {
                    url.push_str(&format!(
                        "&sslcert={}&sslkey={}",
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
        format!(
            "postgres://postgres@127.0.0.1:{}/postgres",
            self.server.port()
        )
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

    /// `psql` connected to the server's `postgres` database as `postgres` (quiet,
    /// unaligned, tuples only, stopping at the first error), as a foreign client
    /// for the interoperability tests. TLS servers are not covered.
    ///
    /// # Errors
    ///
    /// [`TestkitError::NotFound`] if `psql` is missing.
    pub fn psql(&self) -> Result<tokio::process::Command, TestkitError> {
        let bundled = self.bin.join("psql");
        let psql = if bundled.is_file() {
            bundled
        } else {
            find_binary("psql", "LOCKKIT_PSQL_BIN")?
        };
        let mut cmd = tokio::process::Command::new(psql);
        cmd.args([
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            "127.0.0.1",
        ])
        .arg("-p")
        .arg(self.server.port().to_string())
        .args(["-U", "postgres", "-d", "postgres"]);
        Ok(cmd)
    }

    /// Where the binaries live.
    pub fn bin_dir(&self) -> &Path {
        &self.bin
    }
}

/// Makes the cluster in `data` accept TLS connections only: certificates in
/// `dir` (the key readable by the server's user alone, as PostgreSQL insists), and
/// a `pg_hba.conf` of `hostssl` lines (`clientcert=verify-ca` when `mutual`).
fn tls_only(
    dir: &Path,
    data: &Path,
    mutual: bool,
    (uid, gid): (u32, u32),
) -> Result<CertAuthority, TestkitError> {
    use std::os::unix::fs::PermissionsExt;
    let certs = CertAuthority::generate(dir)?;
    std::os::unix::fs::chown(&certs.server_key, Some(uid), Some(gid))?;
    std::fs::set_permissions(&certs.server_key, std::fs::Permissions::from_mode(0o600))?;
    let client = if mutual { " clientcert=verify-ca" } else { "" };
    std::fs::write(
        data.join("pg_hba.conf"),
        format!(
            "local all all trust\n\
             hostssl all all 127.0.0.1/32 trust{client}\n\
             hostssl all all ::1/128 trust{client}\n"
        ),
    )?;
    Ok(certs)
}

impl Deref for Postgres {
    type Target = Server;
    fn deref(&self) -> &Server {
        &self.server
    }
}

impl DerefMut for Postgres {
    fn deref_mut(&mut self) -> &mut Server {
        &mut self.server
    }
}

#[cfg(test)]
mod tests {
    use super::Postgres;
    use crate::sysv_shm::{attached, segment_of};

    #[tokio::test]
    async fn a_killed_postgres_leaves_no_shared_memory_segment() {
        let mut pg = Postgres::start().await.unwrap();
        let pid_file = pg._dir.path().join("data").join("postmaster.pid");
        let id = segment_of(&pid_file).expect("postmaster.pid names a segment");
        assert!(
            attached(id).is_some(),
            "segment {id} is not in /proc/sysvipc/shm"
        );
        pg.kill();
        assert_eq!(attached(id), None, "segment {id} outlived its server");
    }
}
