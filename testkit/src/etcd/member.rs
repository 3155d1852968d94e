//! etcd members: their command line (ports, timing, TLS), spawning them, and
//! `etcdctl`, which tells when one is healthy.

use std::path::PathBuf;
use std::time::Duration;

use crate::TestkitError;
use crate::process::{Server, Spec, find_binary, probe_command};
use crate::tls::CertAuthority;

/// TLS on the client port: the files, and whether clients must present a
/// certificate (`--client-cert-auth`).
#[derive(Debug, Clone)]
pub(super) struct Tls {
    pub(super) files: CertAuthority,
    pub(super) mutual: bool,
}

/// One member's name, ports and directory.
pub(super) struct Member {
    pub(super) name: String,
    pub(super) client: u16,
    pub(super) peer: u16,
    pub(super) dir: PathBuf,
}

/// `https` for a TLS client port, else `http`.
fn client_scheme(tls: Option<&Tls>) -> &'static str {
    if tls.is_some() { "https" } else { "http" }
}

/// The member's raft timing: fast for tests, or etcd's own defaults (heartbeat
/// 100 ms, election 1000 ms), under which etcd grants no lease shorter than 2 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Timing {
    Fast,
    Default,
}

/// The etcd command line of member `m` of `cluster`.
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
pub(super) fn etcdctl(port: u16, tls: Option<&Tls>) -> Option<tokio::process::Command> {
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

/// Spawns every member of one cluster (not yet waited for).
pub(super) fn spawn_members(
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

/// Waits until the member of `server` reports healthy.
pub(super) async fn wait_healthy(
    server: &mut Server,
    tls: Option<&Tls>,
) -> Result<(), TestkitError> {
    let tls = tls.cloned();
    server
        .wait_ready(move |port| healthy(port, tls.clone()))
        .await
}
