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
