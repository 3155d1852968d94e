//! etcd: one node, or a 3-node cluster (heartbeat 10 ms, election 100 ms).

use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::time::Duration;

use tempfile::TempDir;

use crate::process::{Server, Spec, find_binary, probe_command, temp_dir};
use crate::{TestkitError, free_port};

/// One etcd member on 127.0.0.1.
#[derive(Debug)]
pub struct Etcd {
    server: Server,
    name: String,
    _dir: Option<TempDir>,
}

struct Member {
    name: String,
    client: u16,
    peer: u16,
    dir: PathBuf,
}

fn member_args(m: &Member, cluster: &str, token: &str) -> Vec<String> {
    let client = format!("http://127.0.0.1:{}", m.client);
    let peer = format!("http://127.0.0.1:{}", m.peer);
    vec![
        format!("--name={}", m.name),
        format!("--data-dir={}", m.dir.join("data").display()),
        format!("--listen-client-urls={client}"),
        format!("--advertise-client-urls={client}"),
        format!("--listen-peer-urls={peer}"),
        format!("--initial-advertise-peer-urls={peer}"),
        format!("--initial-cluster={cluster}"),
        format!("--initial-cluster-token={token}"),
        "--initial-cluster-state=new".into(),
        "--heartbeat-interval=10".into(),
        "--election-timeout=100".into(),
        "--logger=zap".into(),
        format!("--log-outputs={}", m.dir.join("etcd.log").display()),
    ]
}

async fn healthy(port: u16) -> bool {
    let Ok(etcdctl) = find_binary("etcdctl", "LOCKKIT_ETCDCTL_BIN") else {
        return false;
    };
    let mut cmd = tokio::process::Command::new(etcdctl);
    cmd.env("ETCDCTL_API", "3").args([
        &format!("--endpoints=127.0.0.1:{port}"),
        "--command-timeout=1s",
        "endpoint",
        "health",
    ]);
    probe_command(cmd).await
}

fn spawn_members(members: &[Member], token: &str) -> Result<Vec<Server>, TestkitError> {
    let binary = find_binary("etcd", "LOCKKIT_ETCD_BIN")?;
    find_binary("etcdctl", "LOCKKIT_ETCDCTL_BIN")?;
    let cluster: Vec<String> = members
        .iter()
        .map(|m| format!("{}=http://127.0.0.1:{}", m.name, m.peer))
        .collect();
    let cluster = cluster.join(",");
    members
        .iter()
        .map(|m| {
            Server::spawn(Spec {
                binary: binary.clone(),
                args: member_args(m, &cluster, token),
                uid_gid: None,
                port: m.client,
                log: m.dir.join("etcd.log"),
                ready_timeout: Duration::from_secs(20),
            })
        })
        .collect()
}

impl Etcd {
    /// Starts a single-node cluster.
    ///
    /// # Errors
    ///
    /// [`TestkitError::NotFound`] if etcd/etcdctl are missing; `NotReady` with the
    /// log's tail if it never reports healthy.
    pub async fn start() -> Result<Self, TestkitError> {
        let dir = temp_dir()?;
        let member = Member {
            name: "n1".into(),
            client: free_port()?,
            peer: free_port()?,
            dir: dir.path().to_path_buf(),
        };
        let mut servers = spawn_members(std::slice::from_ref(&member), "lockkit-single")?;
        let mut server = servers.remove(0);
        server.wait_ready(healthy).await?;
        Ok(Self {
            server,
            name: member.name,
            _dir: Some(dir),
        })
    }

    /// `etcd://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("etcd://127.0.0.1:{}", self.server.port())
    }

    /// The member's name (`n1`, `m1`…).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Starts the member again on its data dir and ports, and waits until the
    /// cluster reports it healthy.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub async fn restart(&mut self) -> Result<(), TestkitError> {
        self.server.respawn()?;
        self.server.wait_ready(healthy).await
    }
}

impl Deref for Etcd {
    type Target = Server;
    fn deref(&self) -> &Server {
        &self.server
    }
}

impl DerefMut for Etcd {
    fn deref_mut(&mut self) -> &mut Server {
        &mut self.server
    }
}

/// A 3-member etcd cluster on 127.0.0.1.
#[derive(Debug)]
pub struct EtcdCluster {
    /// The members, each controllable on its own.
    pub members: Vec<Etcd>,
    _dir: TempDir,
}

impl EtcdCluster {
    /// Starts `n` members and waits until every one is healthy.
    ///
    /// # Errors
    ///
    /// As [`Etcd::start`].
    pub async fn start(n: usize) -> Result<Self, TestkitError> {
        let dir = temp_dir()?;
        let mut members = Vec::with_capacity(n);
        for i in 1..=n {
            let mdir = dir.path().join(format!("m{i}"));
            std::fs::create_dir_all(&mdir)?;
            members.push(Member {
                name: format!("m{i}"),
                client: free_port()?,
                peer: free_port()?,
                dir: mdir,
            });
        }
        let servers = spawn_members(&members, "lockkit-cluster")?;
        let mut out = Vec::with_capacity(n);
        for (server, m) in servers.into_iter().zip(members) {
            out.push(Etcd {
                server,
                name: m.name,
                _dir: None,
            });
        }
        for m in &mut out {
            m.server.wait_ready(healthy).await?;
        }
        Ok(Self {
            members: out,
            _dir: dir,
        })
    }

    /// `etcd://127.0.0.1:P1,127.0.0.1:P2,…` (the members still running).
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .members
            .iter()
            .filter(|m| m.pid().is_some())
            .map(|m| format!("127.0.0.1:{}", m.port()))
            .collect();
        format!("etcd://{}", hosts.join(","))
    }

    /// The index of the current leader, as the members report it.
    pub async fn leader(&self) -> Option<usize> {
        let etcdctl = find_binary("etcdctl", "LOCKKIT_ETCDCTL_BIN").ok()?;
        for (i, m) in self.members.iter().enumerate() {
            if m.pid().is_none() {
                continue;
            }
            let out = tokio::process::Command::new(&etcdctl)
                .env("ETCDCTL_API", "3")
                .args([
                    &format!("--endpoints=127.0.0.1:{}", m.port()),
                    "--command-timeout=1s",
                    "endpoint",
                    "status",
                    "-w",
                    "fields",
                ])
                .output()
                .await
                .ok()?;
            let text = String::from_utf8_lossy(&out.stdout);
            let field = |name: &str| {
                text.lines()
                    .find(|l| l.starts_with(&format!("\"{name}\"")))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|v| v.trim().to_string())
            };
            if let (Some(member), Some(leader)) = (field("MemberID"), field("Leader"))
                && member == leader
            {
                return Some(i);
            }
        }
        None
    }
}
