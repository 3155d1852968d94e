//! Running redis-server: on free ports (again on new ones when a port is taken
//! meanwhile), then waiting until it answers PING, over TLS for a TLS server.

use std::time::Duration;

use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::tls::tls_ping;
use super::{ClusterBus, Redis, TlsFiles};
use crate::process::{Server, Spec, find_binary};
use crate::scratch_dir::temp_dir;
use crate::{TestkitError, free_port};

/// Whether the server on `port` answers PING with PONG (bounded).
async fn ping(port: u16) -> bool {
    let attempt = async {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()?;
        s.write_all(b"PING\r\n").await.ok()?;
        let mut buf = [0u8; 7];
        s.read_exact(&mut buf).await.ok()?;
        Some(&buf == b"+PONG\r\n")
    };
    matches!(
        tokio::time::timeout(Duration::from_millis(500), attempt).await,
        Ok(Some(true))
    )
}

impl Redis {
    /// A TLS-only server in `dir` with the certificates in `files` (which may live
    /// elsewhere, shared by several servers) and `extra` arguments.
    pub(super) async fn launch_tls(
        dir: TempDir,
        files: TlsFiles,
        extra: &[String],
        bus: ClusterBus,
    ) -> Result<Self, TestkitError> {
        Self::launch(dir, Some(files), extra, bus).await
    }

    pub(super) async fn start_with(
        extra: &[String],
        bus: ClusterBus,
    ) -> Result<Self, TestkitError> {
        Self::launch(temp_dir()?, None, extra, bus).await
    }

    /// Runs redis-server in `dir` on free ports, with `extra` after the common
    /// arguments, and waits until it answers. A free port can be taken by another
    /// process between our choosing it and the server binding it; then the server
    /// exits with "Address already in use", and it is started again on new ports.
    pub(super) async fn launch(
        mut dir: TempDir,
        tls: Option<TlsFiles>,
        extra: &[String],
        bus: ClusterBus,
    ) -> Result<Self, TestkitError> {
        const ATTEMPTS: usize = 5;
        let binary = find_binary("redis-server", "LOCKKIT_REDIS_BIN")?;
        let log = dir.path().join("redis.log");
        for attempt in 1..=ATTEMPTS {
            let port = free_port()?;
            let mut args: Vec<String> = [
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                // A replica's first sync starts at once, not after Redis's 5 s
                // wait for more replicas to share the transfer.
                "--repl-diskless-sync-delay",
                "0",
                "--dir",
                &dir.path().display().to_string(),
                "--logfile",
                &log.display().to_string(),
            ]
            .map(String::from)
            .to_vec();
            match &tls {
                Some(files) => args.extend(files.server_args(port)),
                None => args.extend(["--port".to_string(), port.to_string()]),
            }
            if bus == ClusterBus::FreePort {
                // Redis's default (the client port + 10000) overflows for client
                // ports above 55535, which the ephemeral range hands out.
                args.extend(["--cluster-port".to_string(), free_port()?.to_string()]);
            }
            args.extend(extra.iter().cloned());
            let server = Server::spawn(Spec {
                binary: binary.clone(),
                args,
                uid_gid: None,
                port,
                log: log.clone(),
                ready_timeout: Duration::from_secs(15),
            })?;
            let mut redis = Self {
                server,
                tls: tls.clone(),
                _dir: dir,
            };
            match redis.wait_ready().await {
                Ok(()) => return Ok(redis),
                Err(TestkitError::NotReady { tail, .. })
                    if attempt < ATTEMPTS && tail.contains("Address already in use") =>
                {
                    let Self { server, _dir, .. } = redis;
                    drop(server);
                    dir = _dir;
                    // A cluster node wrote its identity; the next start is a new node.
                    let _ = std::fs::remove_file(dir.path().join("nodes.conf"));
                }
                Err(e) => return Err(e),
            }
        }
        Err(TestkitError::Setup {
            step: "redis-server".into(),
            detail: format!("no free port after {ATTEMPTS} attempts"),
        })
    }

    /// Waits for PONG: over plain TCP, or with `redis-cli --tls` for a TLS server.
    pub(super) async fn wait_ready(&mut self) -> Result<(), TestkitError> {
        match self.tls.clone() {
            None => self.server.wait_ready(ping).await,
            Some(files) => {
                let cli = find_binary("redis-cli", "LOCKKIT_REDIS_CLI")?;
                self.server
                    .wait_ready(move |port| tls_ping(cli.clone(), files.clone(), port))
                    .await
            }
        }
    }
}

impl Redis {
    /// Runs a sentinel (`redis-server CONF --sentinel`) in `dir` on a free port,
    /// with `config` (its `sentinel …` lines) in a config file of its own, which
    /// the sentinel rewrites as it learns; with `tls`, on TLS only, reaching the
    /// master over TLS too. Started again on a new port if the port was taken
    /// meanwhile.
    pub(super) async fn launch_sentinel(
        mut dir: TempDir,
        config: &str,
        tls: Option<TlsFiles>,
    ) -> Result<Self, TestkitError> {
        const ATTEMPTS: usize = 5;
        let binary = find_binary("redis-server", "LOCKKIT_REDIS_BIN")?;
        let log = dir.path().join("sentinel.log");
        let conf = dir.path().join("sentinel.conf");
        for _ in 0..ATTEMPTS {
            let port = free_port()?;
            let listen = match &tls {
                None => format!("port {port}\n"),
                Some(files) => {
                    // The server's arguments, as config lines: `--tls-port P` is
                    // `tls-port P`.
                    let args = files.server_args(port);
                    let lines: Vec<String> = args
                        .chunks(2)
                        .map(|pair| format!("{} {}", pair[0].trim_start_matches("--"), pair[1]))
                        .collect();
                    format!("{}\ntls-replication yes\n", lines.join("\n"))
                }
            };
            let text = format!(
                "{listen}bind 127.0.0.1\ndir {}\nlogfile {}\n{config}",
                dir.path().display(),
                log.display()
            );
            std::fs::write(&conf, text).map_err(|e| TestkitError::Setup {
                step: "sentinel config".into(),
                detail: e.to_string(),
            })?;
            let server = Server::spawn(Spec {
                binary: binary.clone(),
                args: vec![conf.display().to_string(), "--sentinel".into()],
                uid_gid: None,
                port,
                log: log.clone(),
                ready_timeout: Duration::from_secs(15),
            })?;
            let mut sentinel = Self {
                server,
                tls: tls.clone(),
                _dir: dir,
            };
            match sentinel.wait_ready().await {
                Ok(()) => return Ok(sentinel),
                Err(TestkitError::NotReady { tail, .. })
                    if tail.contains("Address already in use") =>
                {
                    let Self { server, _dir, .. } = sentinel;
                    drop(server);
                    dir = _dir;
                }
                Err(e) => return Err(e),
            }
        }
        Err(TestkitError::Setup {
            step: "redis sentinel".into(),
            detail: format!("no free port after {ATTEMPTS} attempts"),
        })
    }
}
