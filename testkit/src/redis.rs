//! Redis: one instance, or N independent masters (for Redlock).

use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::process::{Server, Spec, find_binary, temp_dir};
use crate::tls::query_path;
use crate::{CertAuthority, TestkitError, free_port};

/// A throwaway Redis server on 127.0.0.1, without persistence; plain TCP, or TLS
/// only ([`start_tls`](Redis::start_tls)).
#[derive(Debug)]
pub struct Redis {
    server: Server,
    tls: Option<TlsFiles>,
    _dir: TempDir,
}

/// The PEM files of a TLS server, all in its temp dir: a throwaway CA, the server's
/// certificate for `IP:127.0.0.1` signed by it, and a client certificate signed by
/// it (for mutual TLS).
#[derive(Debug, Clone)]
pub struct TlsFiles {
    certs: CertAuthority,
    mutual: bool,
}

/// The CA, server and client certificate paths.
impl std::ops::Deref for TlsFiles {
    type Target = CertAuthority;
    fn deref(&self) -> &CertAuthority {
        &self.certs
    }
}

/// Whether the server answers `redis-cli --tls … ping` with PONG (bounded).
async fn tls_ping(cli: PathBuf, files: TlsFiles, port: u16) -> bool {
    let mut cmd = tokio::process::Command::new(cli);
    cmd.arg("--tls").arg("--cacert").arg(&files.ca);
    if files.mutual {
        cmd.arg("--cert").arg(&files.client_cert);
        cmd.arg("--key").arg(&files.client_key);
    }
    cmd.args(["-h", "127.0.0.1", "-p", &port.to_string(), "ping"])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    matches!(
        tokio::time::timeout(Duration::from_secs(2), cmd.output()).await,
        Ok(Ok(out)) if String::from_utf8_lossy(&out.stdout).trim() == "PONG"
    )
}

impl TlsFiles {
    /// Generates a throwaway CA, a server certificate for `IP:127.0.0.1` (also
    /// good for clientAuth: with `--tls-cluster`, a node presents it to its peers on
    /// the cluster bus) and a client certificate in `dir`.
    fn generate(dir: &Path, mutual: bool) -> Result<Self, TestkitError> {
        Ok(Self {
            certs: CertAuthority::generate(dir)?,
            mutual,
        })
    }

    /// The redis-server arguments: TLS only (`--port 0`), on `port`.
    fn server_args(&self, port: u16) -> Vec<String> {
        let path = |p: &Path| p.display().to_string();
        vec![
            "--port".into(),
            "0".into(),
            "--tls-port".into(),
            port.to_string(),
            "--tls-cert-file".into(),
            path(&self.certs.server_cert),
            "--tls-key-file".into(),
            path(&self.certs.server_key),
            "--tls-ca-cert-file".into(),
            path(&self.certs.ca),
            "--tls-auth-clients".into(),
            if self.mutual { "yes" } else { "no" }.into(),
        ]
    }
}

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
    /// Starts `redis-server` with `--save '' --appendonly no`.
    ///
    /// # Errors
    ///
    /// [`TestkitError::NotFound`] if redis-server is not installed; `NotReady` with
    /// the log's tail if it does not answer PING.
    pub async fn start() -> Result<Self, TestkitError> {
        Self::start_with(&[], ClusterBus::Default).await
    }

    /// Starts `redis-server` with an append-only file fsync'ed on every write
    /// (`--appendonly yes --appendfsync always`): a [`restart`](Self::restart)
    /// keeps the locks and the fencing counters.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub async fn start_persistent() -> Result<Self, TestkitError> {
        let aof = ["--appendonly", "yes", "--appendfsync", "always"].map(String::from);
        Self::start_with(&aof, ClusterBus::Default).await
    }

    /// Starts `redis-server` listening on TLS only (`--port 0 --tls-port P`), with
    /// a throwaway CA and a server certificate for `IP:127.0.0.1` generated in its
    /// temp dir by the `openssl` CLI; clients need not present a certificate.
    /// [`url`](Self::url) is `rediss://127.0.0.1:P?tls_ca=<the CA file>`.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start); `NotFound` if `openssl` is not installed, `Setup`
    /// if a certificate cannot be made.
    pub async fn start_tls() -> Result<Self, TestkitError> {
        Self::start_tls_with(false).await
    }

    /// As [`start_tls`](Self::start_tls), but the server requires a client
    /// certificate signed by its CA (`--tls-auth-clients yes`). [`url`](Self::url)
    /// carries `tls_cert` and `tls_key` for the one in [`TlsFiles`].
    ///
    /// # Errors
    ///
    /// As [`start_tls`](Self::start_tls).
    pub async fn start_mutual_tls() -> Result<Self, TestkitError> {
        Self::start_tls_with(true).await
    }

    async fn start_tls_with(mutual: bool) -> Result<Self, TestkitError> {
        let dir = temp_dir()?;
        let files = TlsFiles::generate(dir.path(), mutual)?;
        Self::launch_tls(dir, files, &[], ClusterBus::Default).await
    }

    /// A TLS-only server in `dir` with the certificates in `files` (which may live
    /// elsewhere, shared by several servers) and `extra` arguments.
    async fn launch_tls(
        dir: TempDir,
        files: TlsFiles,
        extra: &[String],
        bus: ClusterBus,
    ) -> Result<Self, TestkitError> {
        Self::launch(dir, Some(files), extra, bus).await
    }

    async fn start_with(extra: &[String], bus: ClusterBus) -> Result<Self, TestkitError> {
        Self::launch(temp_dir()?, None, extra, bus).await
    }

    /// Runs redis-server in `dir` on free ports, with `extra` after the common
    /// arguments, and waits until it answers. A free port can be taken by another
    /// process between our choosing it and the server binding it; then the server
    /// exits with "Address already in use", and it is started again on new ports.
    async fn launch(
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
    async fn wait_ready(&mut self) -> Result<(), TestkitError> {
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

    /// `redis://127.0.0.1:PORT`; for a TLS server
    /// `rediss://127.0.0.1:PORT?tls_ca=<CA file>` (plus `&tls_cert=…&tls_key=…` when
    /// it requires a client certificate).
    pub fn url(&self) -> String {
        let port = self.server.port();
        match &self.tls {
            None => format!("redis://127.0.0.1:{port}"),
            Some(f) if f.mutual => format!(
                "rediss://127.0.0.1:{port}?tls_ca={}&tls_cert={}&tls_key={}",
                f.ca.display(),
                f.client_cert.display(),
                f.client_key.display()
            ),
            Some(f) => format!("rediss://127.0.0.1:{port}?tls_ca={}", f.ca.display()),
        }
    }

    /// The certificate files of a TLS server; `None` for a plain one.
    pub fn tls_files(&self) -> Option<&TlsFiles> {
        self.tls.as_ref()
    }

    /// Starts it again on the same port. Unless it was started with
    /// [`start_persistent`](Self::start_persistent), the data is gone.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub async fn restart(&mut self) -> Result<(), TestkitError> {
        self.server.respawn()?;
        self.wait_ready().await
    }
}

impl Deref for Redis {
    type Target = Server;
    fn deref(&self) -> &Server {
        &self.server
    }
}

impl DerefMut for Redis {
    fn deref_mut(&mut self) -> &mut Server {
        &mut self.server
    }
}

/// N independent Redis masters (for Redlock): plain, or TLS only with one CA for
/// every master ([`start_tls`](RedisMasters::start_tls)).
#[derive(Debug)]
pub struct RedisMasters {
    /// The masters, each controllable on its own.
    pub nodes: Vec<Redis>,
    /// For TLS masters: the certificates, shared by all of them, and their dir.
    tls: Option<(TlsFiles, TempDir)>,
}

impl RedisMasters {
    /// Starts `n` independent masters.
    ///
    /// # Errors
    ///
    /// As [`Redis::start`].
    pub async fn start(n: usize) -> Result<Self, TestkitError> {
        let mut nodes = Vec::with_capacity(n);
        for _ in 0..n {
            nodes.push(Redis::start().await?);
        }
        Ok(Self { nodes, tls: None })
    }

    /// Starts `n` TLS-only masters whose certificates come from one throwaway CA;
    /// [`url`](Self::url) is `redlocks://…?tls_ca=CA`. With `mutual`, every master
    /// also requires a client certificate from that CA, and the URL carries one.
    ///
    /// # Errors
    ///
    /// As [`Redis::start_tls`].
    pub async fn start_tls(n: usize, mutual: bool) -> Result<Self, TestkitError> {
        let certs = temp_dir()?;
        let files = TlsFiles::generate(certs.path(), mutual)?;
        let mut nodes = Vec::with_capacity(n);
        for _ in 0..n {
            nodes.push(
                Redis::launch_tls(temp_dir()?, files.clone(), &[], ClusterBus::Default).await?,
            );
        }
        Ok(Self {
            nodes,
            tls: Some((files, certs)),
        })
    }

    /// `redlock://127.0.0.1:P1,127.0.0.1:P2,…`; for TLS masters
    /// `redlocks://…?tls_ca=CA` (plus `tls_cert` and `tls_key` when they require a
    /// client certificate).
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        match &self.tls {
            None => format!("redlock://{}", hosts.join(",")),
            Some((f, _)) => {
                let mut url = format!(
                    "redlocks://{}?tls_ca={}",
                    hosts.join(","),
                    query_path(&f.ca)
                );
                if f.mutual {
                    url.push_str(&format!(
                        "&tls_cert={}&tls_key={}",
                        query_path(&f.client_cert),
                        query_path(&f.client_key)
                    ));
                }
                url
            }
        }
    }

    /// The certificates of TLS masters.
    pub fn tls_files(&self) -> Option<&TlsFiles> {
        self.tls.as_ref().map(|(f, _)| f)
    }
}

/// A Redis Cluster of `n` masters (no replicas), all slots assigned; plain, or TLS
/// only with one CA for every node ([`start_tls`](RedisCluster::start_tls)).
#[derive(Debug)]
pub struct RedisCluster {
    /// The masters, each controllable on its own.
    pub nodes: Vec<Redis>,
    /// For a TLS cluster: the certificates, shared by all nodes, and their dir.
    tls: Option<(TlsFiles, TempDir)>,
}

/// The arguments that make a server a cluster node (paths relative to its --dir).
/// Whether a node needs a cluster-bus port of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClusterBus {
    /// Not a cluster node (Redis would use the client port + 10000 if it were).
    Default,
    /// A cluster node: the bus gets its own free port.
    FreePort,
}

/// Arguments of a cluster node (its ports are chosen by [`Redis::launch`]).
fn cluster_args() -> Vec<String> {
    [
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
        "--cluster-node-timeout",
        "2000",
    ]
    .map(String::from)
    .to_vec()
}

impl RedisCluster {
    /// Starts `n` (≥ 3) cluster-enabled servers, joins them with
    /// `redis-cli --cluster create`, and waits for `cluster_state:ok` on each.
    ///
    /// # Errors
    ///
    /// As [`Redis::start`]; `Setup` if the cluster cannot be formed.
    pub async fn start(n: usize) -> Result<Self, TestkitError> {
        let mut nodes = Vec::with_capacity(n);
        for _ in 0..n {
            nodes.push(Redis::start_with(&cluster_args(), ClusterBus::FreePort).await?);
        }
        Self::form(nodes, None).await
    }

    /// As [`start`](Self::start), but every node listens on TLS only, the cluster
    /// bus runs over TLS too (`--tls-cluster yes`), and all node certificates come from one throwaway CA.
    ///
    /// # Errors
    ///
    /// As [`Redis::start_tls`]; `Setup` if the cluster cannot be formed.
    pub async fn start_tls(n: usize) -> Result<Self, TestkitError> {
        let certs = temp_dir()?;
        let files = TlsFiles::generate(certs.path(), false)?;
        let mut nodes = Vec::with_capacity(n);
        for _ in 0..n {
            let mut args = cluster_args();
            args.extend(["--tls-cluster", "yes", "--tls-replication", "yes"].map(String::from));
            nodes.push(
                Redis::launch_tls(temp_dir()?, files.clone(), &args, ClusterBus::FreePort).await?,
            );
        }
        Self::form(nodes, Some((files, certs))).await
    }

    /// `redis-cli` arguments to reach the nodes (TLS options for a TLS cluster).
    fn cli_tls_args(tls: Option<&TlsFiles>) -> Vec<String> {
        tls.map(|f| {
            vec![
                "--tls".to_string(),
                "--cacert".to_string(),
                f.ca.display().to_string(),
            ]
        })
        .unwrap_or_default()
    }

    /// Joins `nodes` with `redis-cli --cluster create` and waits for
    /// `cluster_state:ok` on each.
    async fn form(
        mut nodes: Vec<Redis>,
        tls: Option<(TlsFiles, TempDir)>,
    ) -> Result<Self, TestkitError> {
        let tls_args = Self::cli_tls_args(tls.as_ref().map(|(f, _)| f));
        let cli = find_binary("redis-cli", "LOCKKIT_REDIS_CLI")?;
        let mut create = std::process::Command::new(&cli);
        create.args(&tls_args).arg("--cluster").arg("create");
        for n in &nodes {
            create.arg(format!("127.0.0.1:{}", n.port()));
        }
        create.args(["--cluster-replicas", "0", "--cluster-yes"]);
        crate::process::run_setup("redis-cli --cluster create", &mut create)?;
        for n in &mut nodes {
            let cli = cli.clone();
            let tls_args = tls_args.clone();
            n.server
                .wait_ready(move |port| {
                    let cli = cli.clone();
                    let tls_args = tls_args.clone();
                    async move {
                        let out = tokio::process::Command::new(&cli)
                            .args(&tls_args)
                            .args(["-p", &port.to_string(), "cluster", "info"])
                            .output()
                            .await;
                        out.is_ok_and(|o| {
                            String::from_utf8_lossy(&o.stdout).contains("cluster_state:ok")
                        })
                    }
                })
                .await?;
        }
        Ok(Self { nodes, tls })
    }

    /// `redis-cluster://127.0.0.1:P1,127.0.0.1:P2,…` (seed nodes); for a TLS
    /// cluster `rediss-cluster://…?tls_ca=<CA file>`.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        match &self.tls {
            None => format!("redis-cluster://{}", hosts.join(",")),
            Some((f, _)) => format!(
                "rediss-cluster://{}?tls_ca={}",
                hosts.join(","),
                f.ca.display()
            ),
        }
    }
}
