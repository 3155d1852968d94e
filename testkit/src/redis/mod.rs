//! Redis: one instance, or N independent masters (for Redlock), or a Cluster, or
//! a master with replicas under sentinels.
//!
//! [`Redis`] is here; [`launch`] runs redis-server and waits for it, [`settings`]
//! starts it as a deployment may have it, [`tls`] holds a
//! TLS server's certificates, [`masters`], [`cluster`] and [`sentinel`] the
//! multi-server setups, [`failover`] a Cluster's failover, and [`ask`] the raw
//! command those use to watch nodes.

mod ask;
mod cluster;
mod failover;
mod launch;
mod masters;
mod sentinel;
mod settings;
mod tls;

use std::ops::{Deref, DerefMut};

use tempfile::TempDir;

use crate::TestkitError;
use crate::process::Server;
use crate::scratch_dir::temp_dir;
pub use cluster::RedisCluster;
pub use masters::RedisMasters;
pub use sentinel::RedisSentinels;
pub use settings::RedisSettings;
pub use tls::TlsFiles;

/// A throwaway Redis server on 127.0.0.1, without persistence; plain TCP, or TLS
/// only ([`start_tls`](Redis::start_tls)).
#[derive(Debug)]
pub struct Redis {
    server: Server,
    tls: Option<TlsFiles>,
    _dir: TempDir,
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

    /// Starts `redis-server` that, started again after a [`save`](Self::save),
    /// spends about 2.5 s loading its snapshot and answers every request with
    /// `LOADING` meanwhile, as a restarted server with a large dataset does: a
    /// ballast of 5,000 keys, each loaded with a 500 µs delay (Redis's hidden test
    /// settings `key-load-delay` and `loading-process-events-interval-bytes`, the
    /// latter so that it answers while it loads). See
    /// [`start_loading`](Self::start_loading).
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start); `Setup` if the ballast cannot be written.
    pub async fn start_slow_to_load() -> Result<Self, TestkitError> {
        let slow = [
            "--key-load-delay",
            "500",
            "--loading-process-events-interval-bytes",
            "1024",
        ]
        .map(String::from);
        let server = Self::start_with(&slow, ClusterBus::Default).await?;
        let ballast = "EVAL \"for i = 1, 5000 do redis.call('SET', 'ballast:' .. i, i) end\" 0";
        if server.ask(ballast).await.is_none() {
            return Err(TestkitError::Setup {
                step: "writing the ballast keys".into(),
                detail: "EVAL got no answer or an error".into(),
            });
        }
        Ok(server)
    }

    /// Writes a snapshot (`SAVE`), which a server without persistence loads when it
    /// starts again. Whether it was written.
    pub async fn save(&self) -> bool {
        self.ask("SAVE").await.is_some_and(|r| r == ["OK"])
    }

    /// Starts the server again on the same port (after [`Server::kill`]), and
    /// returns as soon as it accepts connections, before it has loaded its
    /// snapshot: until then it answers `LOADING`.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub async fn start_loading(&mut self) -> Result<(), TestkitError> {
        self.server.respawn()?;
        self.server
            .wait_ready(|port| async move {
                tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .is_ok()
            })
            .await
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

    /// Sends one inline command (words separated by spaces), over TLS to a TLS
    /// server, and returns the reply's strings, flattened: each bulk string,
    /// status or integer of an array, or the lines of a bulk string. `None` on an
    /// error reply or no answer within 1 s. For a test that reads a server's state
    /// without a client library.
    pub async fn ask(&self, command: &str) -> Option<Vec<String>> {
        ask::ask(self.server.port(), self.tls.as_ref(), command).await
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

/// Whether a node needs a cluster-bus port of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClusterBus {
    /// Not a cluster node (Redis would use the client port + 10000 if it were).
    Default,
    /// A cluster node: the bus gets its own free port.
    FreePort,
}
