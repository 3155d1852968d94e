//! A TLS Redis server's certificates, its TLS arguments and its TLS ping.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::{CertAuthority, TestkitError};

/// The PEM files of a TLS server, all in its temp dir: a throwaway CA, the server's
/// certificate for `IP:127.0.0.1` signed by it, and a client certificate signed by
/// it (for mutual TLS).
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub(super) certs: CertAuthority,
    pub(super) mutual: bool,
}

/// The CA, server and client certificate paths.
impl std::ops::Deref for TlsFiles {
    type Target = CertAuthority;
    fn deref(&self) -> &CertAuthority {
        &self.certs
    }
}

/// Whether the server answers `redis-cli --tls … ping` with PONG (bounded).
pub(super) async fn tls_ping(cli: PathBuf, files: TlsFiles, port: u16) -> bool {
    let mut cmd = tokio::process::Command::new(cli);
    cmd.arg("--tls").arg("--cacert").arg(&files.ca);
    if files.mutual {
        cmd.arg("--cert").arg(&files.client_cert);
        cmd.arg("--key").arg(&files.client_key);
    }
    cmd.args(["-h", "127.0.0.1", "-p", &port.to_string(), "ping"])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    matches!(
        tokio::time::timeout(Duration::from_secs(2), cmd.output()).await,
        Ok(Ok(out)) if String::from_utf8_lossy(&out.stdout).trim() == "PONG"
    )
}

impl TlsFiles {
    /// Generates a throwaway CA, a server certificate for `IP:127.0.0.1` (also
    /// good for clientAuth: with `--tls-cluster`, a node presents it to its peers on
    /// the cluster bus) and a client certificate in `dir`.
    pub(super) fn generate(dir: &Path, mutual: bool) -> Result<Self, TestkitError> {
        Ok(Self {
            certs: CertAuthority::generate(dir)?,
            mutual,
        })
    }

    /// The redis-server arguments: TLS only (`--port 0`), on `port`.
    pub(super) fn server_args(&self, port: u16) -> Vec<String> {
        let path = |p: &Path| p.display().to_string();
        vec![
            "--port".into(),
            "0".into(),
            "--tls-port".into(),
            port.to_string(),
            "--tls-cert-file".into(),
            path(&self.certs.server_cert),
            "--tls-key-file".into(),
            path(&self.certs.server_key),
            "--tls-ca-cert-file".into(),
            path(&self.certs.ca),
            "--tls-auth-clients".into(),
            if self.mutual { "yes" } else { "no" }.into(),
        ]
    }
}
