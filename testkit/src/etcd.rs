//! etcd: one node, or a 3-node cluster (heartbeat 10 ms, election 100 ms); plain
//! or with TLS on the client port (`start_tls`); and one node with etcd's default
//! timing (`start_with_default_flags`), as users run it.

use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::time::Duration;

use tempfile::TempDir;

use crate::process::{Server, Spec, find_binary, probe_command, temp_dir};
use crate::tls::{CertAuthority, query_path};
use crate::{TestkitError, free_port};

/// One etcd member on 127.0.0.1.
#[derive(Debug)]
pub struct Etcd {
    server: Server,
    name: String,
    tls: Option<Tls>,
    _dir: Option<TempDir>,
}

/// TLS on the client port: the files, and whether clients must present a
/// certificate (`--client-cert-auth`).
#[derive(Debug, Clone)]
struct Tls {
    files: CertAuthority,
    mutual: bool,
}

struct Member {
    name: String,
    client: u16,
    peer: u16,
    dir: PathBuf,
}

fn client_scheme(tls: Option<&Tls>) -> &'static str {
    if tls.is_some() { "https" } else { "http" }
}

/// The member's raft timing: fast for tests, or etcd's own defaults (heartbeat
/// 100 ms, election 1000 ms), under which etcd grants no lease shorter than 2 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timing {
    Fast,
    Default,
}

fn member_args(
    m: &Member,
    cluster: &str,
    token: &str,
    tls: Option<&Tls>,
    timing: Timing,
) -> Vec<String> {
    let client = format!("{}://127.0.0.1:{}", client_scheme(tls), m.client);
    let peer = format!("http://127.0.0.1:{}", m.peer);
    let mut args = vec![
        format!("--name={}", m.name),
        format!("--data-dir={}", m.dir.join("data").display()),
        format!("--listen-client-urls={client}"),
        format!("--advertise-client-urls={client}"),
        format!("--listen-peer-urls={peer}"),
        format!("--initial-advertise-peer-urls={peer}"),
        format!("--initial-cluster={cluster}"),
        format!("--initial-cluster-token={token}"),
        "--initial-cluster-state=new".into(),
        "--logger=zap".into(),
        format!("--log-outputs={}", m.dir.join("etcd.log").display()),
    ];
    if timing == Timing::Fast {
        args.extend([
            "--heartbeat-interval=10".into(),
            "--election-timeout=100".into(),
        ]);
    }
    if let Some(tls) = tls {
        // Peers stay on plain HTTP: only the client port is under test.
        args.extend([
            format!("--cert-file={}", tls.files.server_cert.display()),
            format!("--key-file={}", tls.files.server_key.display()),
            format!("--client-cert-auth={}", tls.mutual),
        ]);
        if tls.mutual {
            // etcd 3.4 requires a client certificate whenever it has a trusted CA
            // (--client-cert-auth=false or not), so only the mutual server gets one.
            args.push(format!("--trusted-ca-file={}", tls.files.ca.display()));
        }
    }
    args
}

/// `etcdctl` with the endpoint and, for TLS, the CA (and client certificate).
fn etcdctl(port: u16, tls: Option<&Tls>) -> Option<tokio::process::Command> {
    let etcdctl = find_binary("etcdctl", "LOCKKIT_ETCDCTL_BIN").ok()?;
    let mut cmd = tokio::process::Command::new(etcdctl);
    cmd.env("ETCDCTL_API", "3")
        .arg(format!(
            "--endpoints={}://127.0.0.1:{port}",
            client_scheme(tls)
        ))
        .arg("--command-timeout=1s")
        .arg("--dial-timeout=1s");
    if let Some(tls) = tls {
        cmd.arg(format!("--cacert={}", tls.files.ca.display()));
        if tls.mutual {
            cmd.arg(format!("--cert={}", tls.files.client_cert.display()));
            cmd.arg(format!("--key={}", tls.files.client_key.display()));
        }
    }
    cmd.kill_on_drop(true);
    Some(cmd)
}

/// Whether the member on `port` reports healthy (bounded: 5 s at most).
async fn healthy(port: u16, tls: Option<Tls>) -> bool {
    let Some(mut cmd) = etcdctl(port, tls.as_ref()) else {
        return false;
    };
    cmd.args(["endpoint", "health"]);
    probe_command(cmd).await
}

fn spawn_members(
    members: &[Member],
    token: &str,
    tls: Option<&Tls>,
    timing: Timing,
) -> Result<Vec<Server>, TestkitError> {
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
                args: member_args(m, &cluster, token, tls, timing),
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
        Self::start_with(None, Timing::Fast).await
    }

    /// Starts a single-node cluster with etcd's default timing (heartbeat 100 ms,
    /// election timeout 1000 ms), as users run it: etcd then raises every lease
    /// shorter than 1.5 × the election timeout to 2 s.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start).
    pub async fn start_with_default_flags() -> Result<Self, TestkitError> {
        Self::start_with(None, Timing::Default).await
    }

    /// Starts a single-node cluster that serves clients over TLS only, with a
    /// throwaway CA (see [`tls_files`](Self::tls_files)); [`url`](Self::url) is
    /// `etcds://127.0.0.1:PORT?tls_ca=CA`. Client certificates are not required.
    ///
    /// # Errors
    ///
    /// As [`start`](Self::start); `NotFound` or `Setup` from `openssl`.
    pub async fn start_tls() -> Result<Self, TestkitError> {
        Self::start_with(Some(false), Timing::Fast).await
    }

    /// As [`start_tls`](Self::start_tls), but the server requires a client
    /// certificate signed by its CA (`--client-cert-auth`); [`url`](Self::url)
    /// carries `tls_cert` and `tls_key` for the one in
    /// [`tls_files`](Self::tls_files).
    ///
    /// # Errors
    ///
    /// As [`start_tls`](Self::start_tls).
    pub async fn start_mutual_tls() -> Result<Self, TestkitError> {
        Self::start_with(Some(true), Timing::Fast).await
    }

    async fn start_with(mutual: Option<bool>, timing: Timing) -> Result<Self, TestkitError> {
        let dir = temp_dir()?;
        let tls = match mutual {
            Some(mutual) => Some(Tls {
                files: CertAuthority::generate(dir.path())?,
                mutual,
            }),
            None => None,
        };
        let member = Member {
            name: "n1".into(),
            client: free_port()?,
            peer: free_port()?,
            dir: dir.path().to_path_buf(),
        };
        let mut servers = spawn_members(
            std::slice::from_ref(&member),
            "lockkit-single",
            tls.as_ref(),
            timing,
        )?;
        let mut server = servers.remove(0);
        wait_healthy(&mut server, tls.as_ref()).await?;
        Ok(Self {
            server,
            name: member.name,
            tls,
            _dir: Some(dir),
        })
    }

    /// `etcd://127.0.0.1:PORT`; for a TLS member
    /// `etcds://127.0.0.1:PORT?tls_ca=CA` (plus `&tls_cert=…&tls_key=…` when it
    /// requires a client certificate).
    pub fn url(&self) -> String {
        let host = format!("127.0.0.1:{}", self.server.port());
        url_for(&[host], self.tls.as_ref())
    }

    /// The certificate files of a TLS member (`None` for plain TCP).
    pub fn tls_files(&self) -> Option<&CertAuthority> {
        self.tls.as_ref().map(|t| &t.files)
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
        wait_healthy(&mut self.server, self.tls.as_ref()).await
    }
}

async fn wait_healthy(server: &mut Server, tls: Option<&Tls>) -> Result<(), TestkitError> {
    let tls = tls.cloned();
    server
        .wait_ready(move |port| healthy(port, tls.clone()))
        .await
}

/// The driver URL for `hosts`, with the TLS files as query options.
fn url_for(hosts: &[String], tls: Option<&Tls>) -> String {
    match tls {
        None => format!("etcd://{}", hosts.join(",")),
        Some(tls) => {
            let mut url = format!(
                "etcds://{}?tls_ca={}",
                hosts.join(","),
                query_path(&tls.files.ca)
            );
            if tls.mutual {
                url.push_str(&format!(
                    "&tls_cert={}&tls_key={}",
                    query_path(&tls.files.client_cert),
                    query_path(&tls.files.client_key)
                ));
            }
            url
        }
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
