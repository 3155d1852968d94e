//! A Redis master with replicas, watched by sentinels: Redis Sentinel's
//! failover, on 127.0.0.1.

use std::time::Duration;

use tempfile::TempDir;
use tokio::time::Instant;

use super::ask::{ask, drop_replicas, role, wait_caught_up};
use super::{ClusterBus, Redis, TlsFiles};
use crate::TestkitError;
use crate::scratch_dir::temp_dir;
use crate::tls::query_path;

/// The name the sentinels monitor the master under.
const MASTER_NAME: &str = "lockkit";

/// How long a sentinel waits for an unanswering master before it calls it down.
const DOWN_AFTER: Duration = Duration::from_millis(1000);

/// A master, its replicas and the sentinels that watch them; plain, or TLS only
/// with one CA for every node and sentinel
/// ([`start_tls`](RedisSentinels::start_tls)). The master is the first of
/// [`nodes`](Self::nodes) at the start; after a failover, ask
/// [`master_port`](Self::master_port).
#[derive(Debug)]
pub struct RedisSentinels {
    /// The data nodes: the first master, then the replicas.
    pub nodes: Vec<Redis>,
    /// The sentinels.
    pub sentinels: Vec<Redis>,
    /// Whether the replicas were cut off the master and await its failover.
    cut: bool,
    /// For a TLS group: the certificates, shared by all, and their dir.
    tls: Option<(TlsFiles, TempDir)>,
}

impl RedisSentinels {
    /// A master with `replicas` replicas, and `sentinels` sentinels that agree on
    /// a failure when a majority of them sees the master down for 1 s. The
    /// sentinels name the master at once; they learn of the replicas and of each
    /// other over the next seconds, which [`fail_over`](Self::fail_over) waits
    /// for.
    ///
    /// # Errors
    ///
    /// As [`Redis::start`].
    pub async fn start(replicas: usize, sentinels: usize) -> Result<Self, TestkitError> {
        Self::launch(replicas, sentinels, None).await
    }

    /// As [`start`](Self::start), but every node and sentinel listens on TLS only
    /// (`--port 0`), replicas and sentinels reach the master over TLS
    /// (`tls-replication yes`), and all certificates come from one throwaway CA.
    /// [`url`](Self::url) is `rediss-sentinel://…/lockkit?tls_ca=<the CA file>`.
    ///
    /// # Errors
    ///
    /// As [`Redis::start_tls`].
    pub async fn start_tls(replicas: usize, sentinels: usize) -> Result<Self, TestkitError> {
        let certs = temp_dir()?;
        let files = TlsFiles::generate(certs.path(), false)?;
        Self::launch(replicas, sentinels, Some((files, certs))).await
    }

    async fn launch(
        replicas: usize,
        sentinels: usize,
        tls: Option<(TlsFiles, TempDir)>,
    ) -> Result<Self, TestkitError> {
        let files = tls.as_ref().map(|(files, _)| files.clone());
        let over_tls: &[String] = match files {
            Some(_) => &["--tls-replication".to_owned(), "yes".to_owned()],
            None => &[],
        };
        let master =
            Redis::launch(temp_dir()?, files.clone(), over_tls, ClusterBus::Default).await?;
        let master_port = master.port();
        let mut nodes = vec![master];
        for _ in 0..replicas {
            let mut args = over_tls.to_vec();
            args.extend(["--replicaof".to_owned(), format!("127.0.0.1 {master_port}")]);
            nodes
                .push(Redis::launch(temp_dir()?, files.clone(), &args, ClusterBus::Default).await?);
        }
        let quorum = sentinels / 2 + 1;
        let config = format!(
            "sentinel monitor {MASTER_NAME} 127.0.0.1 {master_port} {quorum}\n\
             sentinel down-after-milliseconds {MASTER_NAME} {}\n\
             sentinel failover-timeout {MASTER_NAME} 5000\n\
             sentinel parallel-syncs {MASTER_NAME} 1\n",
            DOWN_AFTER.as_millis()
        );
        let mut watching = Vec::with_capacity(sentinels);
        for _ in 0..sentinels {
            watching.push(Redis::launch_sentinel(temp_dir()?, &config, files.clone()).await?);
        }
        Ok(Self {
            nodes,
            sentinels: watching,
            cut: false,
            tls,
        })
    }

    fn tls_files(&self) -> Option<&TlsFiles> {
        self.tls.as_ref().map(|(files, _)| files)
    }

    /// `redis-sentinel://127.0.0.1:S1,127.0.0.1:S2,…/lockkit`; for a TLS group
    /// `rediss-sentinel://…/lockkit?tls_ca=<the CA file>`.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .sentinels
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port()))
            .collect();
        match self.tls_files() {
            None => format!("redis-sentinel://{}/{MASTER_NAME}", hosts.join(",")),
            Some(f) => format!(
                "rediss-sentinel://{}/{MASTER_NAME}?tls_ca={}",
                hosts.join(","),
                query_path(&f.ca)
            ),
        }
    }

    /// The master's port as the first sentinel that answers tells it.
    pub async fn master_port(&self) -> Option<u16> {
        for sentinel in &self.sentinels {
            let reply = ask(
                sentinel.port(),
                self.tls_files(),
                &format!("SENTINEL get-master-addr-by-name {MASTER_NAME}"),
            )
            .await;
            if let Some(port) = reply.and_then(|lines| lines.get(1)?.parse().ok()) {
                return Some(port);
            }
        }
        None
    }

    /// The data node listening on `port`.
    pub fn node_on(&mut self, port: u16) -> Option<&mut Redis> {
        self.nodes.iter_mut().find(|n| n.port() == port)
    }

    /// Cuts the replicas off the master, once the sentinels watch them: each is
    /// paused (SIGSTOP) and the master drops its links to them (`CLIENT KILL TYPE
    /// replica`), so nothing written to the master from now on reaches a replica,
    /// as when replication lags. The next [`fail_over`](Self::fail_over) resumes
    /// them once the master is dead. Returns the master's port.
    ///
    /// # Errors
    ///
    /// `Setup` if no sentinel names a master, or it does not drop its replicas.
    pub async fn cut_replicas(&mut self) -> Result<u16, TestkitError> {
        self.wait_until_watched().await?;
        let master = self
            .master_port()
            .await
            .ok_or_else(|| TestkitError::Setup {
                step: "cutting replicas off".into(),
                detail: "no sentinel names a master".into(),
            })?;
        for node in self.nodes.iter().filter(|n| n.port() != master) {
            node.pause();
        }
        self.cut = true;
        drop_replicas(master, self.tls_files(), self.nodes.len() - 1).await?;
        Ok(master)
    }

    /// Waits until the sentinels watch every node and each other and the replicas
    /// have applied everything the master wrote (unless the replicas were
    /// [cut off](Self::cut_replicas)), kills the current master
    /// (SIGKILL), resumes replicas that were cut off, and waits until the
    /// sentinels have promoted another node, which answers as a master. Returns
    /// the new master's port. The old master stays down.
    ///
    /// # Errors
    ///
    /// `Setup` if no sentinel names a master, or no other node is promoted within
    /// `within`.
    pub async fn fail_over(&mut self, within: Duration) -> Result<u16, TestkitError> {
        let setup = |detail: String| TestkitError::Setup {
            step: "sentinel failover".into(),
            detail,
        };
        if !self.cut {
            self.wait_until_watched().await?;
        }
        let old = self
            .master_port()
            .await
            .ok_or_else(|| setup("no sentinel names a master".into()))?;
        if !self.cut {
            let replicas: Vec<u16> = self
                .nodes
                .iter()
                .map(|n| n.port())
                .filter(|&p| p != old)
                .collect();
            wait_caught_up(old, &replicas, self.tls_files()).await?;
        }
        self.node_on(old)
            .ok_or_else(|| setup(format!("no node on the master's port {old}")))?
            .kill();
        if std::mem::take(&mut self.cut) {
            for node in &self.nodes {
                node.resume();
            }
        }
        let deadline = Instant::now() + within;
        loop {
            if let Some(new) = self.master_port().await
                && new != old
                && role(new, self.tls_files()).await.as_deref() == Some("master")
            {
                return Ok(new);
            }
            if Instant::now() >= deadline {
                return Err(setup(format!("no replica promoted within {within:?}")));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until every sentinel knows the other sentinels and every replica, and
    /// the replicas are in sync: before that, a failover could not happen.
    ///
    /// # Errors
    ///
    /// `Setup` if that takes longer than 30 s.
    pub async fn wait_until_watched(&self) -> Result<(), TestkitError> {
        let replicas = self.nodes.len() - 1;
        let deadline = Instant::now() + Duration::from_secs(30);
        let others = self.sentinels.len() - 1;
        loop {
            let mut ready = true;
            for sentinel in &self.sentinels {
                let asked = format!("SENTINEL master {MASTER_NAME}");
                let seen = ask(sentinel.port(), self.tls_files(), &asked).await;
                let field = |name: &str| -> usize {
                    seen.as_ref()
                        .and_then(|f| f.iter().position(|x| x == name))
                        .and_then(|i| seen.as_ref()?.get(i + 1)?.parse().ok())
                        .unwrap_or(0)
                };
                ready &= field("num-slaves") >= replicas && field("num-other-sentinels") >= others;
            }
            for node in &self.nodes[1..] {
                ready &= ask(node.port(), self.tls_files(), "INFO replication")
                    .await
                    .is_some_and(|lines| lines.iter().any(|l| l == "master_link_status:up"));
            }
            if ready {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(TestkitError::Setup {
                    step: "redis sentinel".into(),
                    detail: "the sentinels did not see every replica and sentinel within 30 s"
                        .into(),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
