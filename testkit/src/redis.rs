//! Redis: one instance, or N independent masters (for Redlock).

use std::ops::{Deref, DerefMut};
use std::time::Duration;

use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::process::{Server, Spec, find_binary, temp_dir};
use crate::{TestkitError, free_port};

/// A throwaway Redis server on 127.0.0.1, without persistence.
#[derive(Debug)]
pub struct Redis {
    server: Server,
    _dir: TempDir,
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
        Self::start_with(&[]).await
    }

    async fn start_with(extra: &[String]) -> Result<Self, TestkitError> {
        let binary = find_binary("redis-server", "LOCKKIT_REDIS_BIN")?;
        let dir = temp_dir()?;
        let port = free_port()?;
        let log = dir.path().join("redis.log");
        let args = [
            "--port",
            &port.to_string(),
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
        let mut args = args;
        args.extend(extra.iter().cloned());
        let server = Server::spawn(Spec {
            binary,
            args,
            uid_gid: None,
            port,
            log,
            ready_timeout: Duration::from_secs(15),
        })?;
        let mut redis = Self { server, _dir: dir };
        redis.server.wait_ready(ping).await?;
        Ok(redis)
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.server.port())
    }

    /// Starts it again on the same port (no persistence: the data is gone).
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub async fn restart(&mut self) -> Result<(), TestkitError> {
        self.server.respawn()?;
        self.server.wait_ready(ping).await
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

/// N independent Redis masters (for Redlock).
#[derive(Debug)]
pub struct RedisMasters {
    /// The masters, each controllable on its own.
    pub nodes: Vec<Redis>,
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
        Ok(Self { nodes })
    }

    /// `redlock://127.0.0.1:P1,127.0.0.1:P2,…`.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        format!("redlock://{}", hosts.join(","))
    }
}

/// A Redis Cluster of `n` masters (no replicas), all slots assigned.
#[derive(Debug)]
pub struct RedisCluster {
    /// The masters, each controllable on its own.
    pub nodes: Vec<Redis>,
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
            // Relative to the node's own --dir.
            let node = Redis::start_with(&[
                "--cluster-enabled".into(),
                "yes".into(),
                "--cluster-config-file".into(),
                "nodes.conf".into(),
                "--cluster-node-timeout".into(),
                "2000".into(),
            ])
            .await?;
            nodes.push(node);
        }
        let cli = find_binary("redis-cli", "LOCKKIT_REDIS_CLI")?;
        let mut create = std::process::Command::new(&cli);
        create.arg("--cluster").arg("create");
        for n in &nodes {
            create.arg(format!("127.0.0.1:{}", n.port()));
        }
        create.args(["--cluster-replicas", "0", "--cluster-yes"]);
        crate::process::run_setup("redis-cli --cluster create", &mut create)?;
        for n in &mut nodes {
            let cli = cli.clone();
            n.server
                .wait_ready(move |port| {
                    let cli = cli.clone();
                    async move {
                        let out = tokio::process::Command::new(&cli)
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
        Ok(Self { nodes })
    }

    /// `redis-cluster://127.0.0.1:P1,127.0.0.1:P2,…` (seed nodes).
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        format!("redis-cluster://{}", hosts.join(","))
    }
}
