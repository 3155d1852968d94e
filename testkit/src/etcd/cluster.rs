//! A cluster of etcd members on 127.0.0.1, and which of them leads.

use std::time::Duration;

use tempfile::TempDir;

use super::member::{Member, Timing, Tls, etcdctl, spawn_members, wait_healthy};
use super::{Etcd, url_for};
use crate::scratch_dir::temp_dir;
use crate::tls::CertAuthority;
use crate::{TestkitError, free_port};

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
        Self::start_with(n, false).await
    }

    /// As [`start`](Self::start), with TLS on every member's client port (one
    /// throwaway CA and server certificate for all; peers talk plain HTTP).
    /// [`url`](Self::url) is `etcds://…?tls_ca=CA`.
    ///
    /// # Errors
    ///
    /// As [`Etcd::start_tls`].
    pub async fn start_tls(n: usize) -> Result<Self, TestkitError> {
        Self::start_with(n, true).await
    }

    async fn start_with(n: usize, tls: bool) -> Result<Self, TestkitError> {
        let dir = temp_dir()?;
        let tls = if tls {
            Some(Tls {
                files: CertAuthority::generate(dir.path())?,
                mutual: false,
            })
        } else {
            None
        };
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
        let servers = spawn_members(&members, "lockkit-cluster", tls.as_ref(), Timing::Fast)?;
        let mut out = Vec::with_capacity(n);
        for (server, m) in servers.into_iter().zip(members) {
            out.push(Etcd {
                server,
                name: m.name,
                tls: tls.clone(),
                _dir: None,
            });
        }
        for m in &mut out {
            wait_healthy(&mut m.server, m.tls.as_ref()).await?;
        }
        Ok(Self {
            members: out,
            _dir: dir,
        })
    }

    /// `etcd://127.0.0.1:P1,127.0.0.1:P2,…` (the members still running);
    /// `etcds://…?tls_ca=CA` for a TLS cluster.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .members
            .iter()
            .filter(|m| m.pid().is_some())
            .map(|m| format!("127.0.0.1:{}", m.port()))
            .collect();
        url_for(&hosts, self.members.first().and_then(|m| m.tls.as_ref()))
    }

    /// The index of the current leader, as the members report it.
    pub async fn leader(&self) -> Option<usize> {
        for (i, m) in self.members.iter().enumerate() {
            if m.pid().is_none() {
                continue;
            }
            let mut cmd = etcdctl(m.port(), m.tls.as_ref())?;
            cmd.args(["endpoint", "status", "-w", "fields"]);
            let out = tokio::time::timeout(Duration::from_secs(5), cmd.output())
                .await
                .ok()?
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
