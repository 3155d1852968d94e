//! Redis started with the settings a real deployment may have (a memory limit and
//! an eviction policy, `CONFIG` renamed away as managed services do), and an
//! application's cache writes that fill it.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{ClusterBus, Redis};
use crate::TestkitError;

/// Server settings beyond the testkit's defaults, for
/// [`Redis::start_with_settings`].
///
/// ```no_run
/// # async fn f() -> Result<(), lockkit_testkit::TestkitError> {
/// use lockkit_testkit::{Redis, RedisSettings};
///
/// let cache = RedisSettings::default().maxmemory("8mb").maxmemory_policy("allkeys-lru");
/// let server = Redis::start_with_settings(&cache).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct RedisSettings {
    args: Vec<String>,
}

impl RedisSettings {
    /// `--maxmemory LIMIT` (`8mb`, `100000`, …).
    pub fn maxmemory(self, limit: &str) -> Self {
        self.arg("--maxmemory", limit)
    }

    /// `--maxmemory-policy POLICY` (`allkeys-lru`, `volatile-ttl`, …).
    pub fn maxmemory_policy(self, policy: &str) -> Self {
        self.arg("--maxmemory-policy", policy)
    }

    /// `--rename-command CONFIG ""`: `CONFIG` is unknown to every client, as on
    /// managed Redis services; `INFO` still answers.
    pub fn without_config_command(mut self) -> Self {
        self.args
            .extend(["--rename-command", "CONFIG", ""].map(String::from));
        self
    }

    fn arg(mut self, name: &str, value: &str) -> Self {
        self.args.extend([name.to_owned(), value.to_owned()]);
        self
    }
}

impl Redis {
    /// Starts `redis-server` as [`start`](Self::start) does, with `settings`.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub async fn start_with_settings(settings: &RedisSettings) -> Result<Self, TestkitError> {
        Self::start_with(&settings.args, ClusterBus::Default).await
    }

    /// Writes `count` values of `size` bytes, as an application caching in the
    /// same Redis would: `SET <prefix>:<i> <value>` on one plain connection (not
    /// TLS), one command after the other. Returns how many the server took; a
    /// refusal (`OOM` under `noeviction`) is counted, not an error.
    ///
    /// # Errors
    ///
    /// `Setup` if the server cannot be reached or the connection breaks.
    pub async fn write_values(
        &self,
        prefix: &str,
        count: usize,
        size: usize,
    ) -> Result<usize, TestkitError> {
        let broken = |e: std::io::Error| TestkitError::Setup {
            step: "writing values".into(),
            detail: e.to_string(),
        };
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", self.port()))
            .await
            .map_err(broken)?;
        let value = "v".repeat(size);
        let mut taken = 0;
        for i in 0..count {
            let key = format!("{prefix}:{i}");
            let cmd = format!(
                "*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n${size}\r\n{value}\r\n",
                key.len()
            );
            s.write_all(cmd.as_bytes()).await.map_err(broken)?;
            // `+OK\r\n`, or an error line.
            let mut reply = Vec::new();
            while !reply.ends_with(b"\r\n") {
                let mut byte = [0u8; 1];
                s.read_exact(&mut byte).await.map_err(broken)?;
                reply.push(byte[0]);
            }
            taken += usize::from(reply.starts_with(b"+OK"));
        }
        Ok(taken)
    }
}
