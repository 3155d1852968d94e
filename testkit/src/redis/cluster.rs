//! A Redis Cluster of N masters, each with its replicas or none, formed with
//! `redis-cli --cluster create`. Killing a master and waiting for its replica's
//! promotion is in [`failover`](super::failover).

use tempfile::TempDir;

use super::{ClusterBus, Redis, TlsFiles};
use crate::TestkitError;
use crate::process::find_binary;
use crate::scratch_dir::temp_dir;

/// A Redis Cluster of `n` masters, all slots assigned, without replicas or with
/// ([`start_replicated`](RedisCluster::start_replicated)); plain, or TLS only
/// with one CA for every node ([`start_tls`](RedisCluster::start_tls)).
#[derive(Debug)]
pub struct RedisCluster {
    /// The nodes, each controllable on its own: the masters, then their replicas
    /// (which master each follows is the cluster's choice; a failover changes roles).
    pub nodes: Vec<Redis>,
    /// For a TLS cluster: the certificates, shared by all nodes, and their dir.
    pub(super) tls: Option<(TlsFiles, TempDir)>,
    /// Whether some replicas were cut off their master and await its failover.
    pub(super) cut: bool,
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
        Self::start_replicated(n, 0).await
    }

    /// Starts `masters` (≥ 3) masters with `replicas` replicas each
    /// (`--cluster-replicas`), and waits until the cluster is `ok` on every node and
    /// every replica is in sync with its master.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub async fn start_replicated(masters: usize, replicas: usize) -> Result<Self, TestkitError> {
        let n = masters * (1 + replicas);
        let mut nodes = Vec::with_capacity(n);
        for _ in 0..n {
            nodes.push(Redis::start_with(&cluster_args(), ClusterBus::FreePort).await?);
        }
        let cluster = Self::form(nodes, replicas, None).await?;
        if replicas > 0 {
            cluster.wait_until_replicas_sync().await?;
        }
        Ok(cluster)
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
        Self::form(nodes, 0, Some((files, certs))).await
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

    /// Joins `nodes` with `redis-cli --cluster create`, `replicas` per master, and
    /// waits for `cluster_state:ok` on each.
    async fn form(
        mut nodes: Vec<Redis>,
        replicas: usize,
        tls: Option<(TlsFiles, TempDir)>,
    ) -> Result<Self, TestkitError> {
        let tls_args = Self::cli_tls_args(tls.as_ref().map(|(f, _)| f));
        let cli = find_binary("redis-cli", "LOCKKIT_REDIS_CLI")?;
        let mut create = std::process::Command::new(&cli);
        create.args(&tls_args).arg("--cluster").arg("create");
        for n in &nodes {
            create.arg(format!("127.0.0.1:{}", n.port()));
        }
        let replicas = replicas.to_string();
        create.args(["--cluster-replicas", &replicas, "--cluster-yes"]);
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
        Ok(Self {
            nodes,
            tls,
            cut: false,
        })
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
