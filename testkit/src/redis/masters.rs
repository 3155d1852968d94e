//! N independent Redis masters, for Redlock.

use tempfile::TempDir;

use super::{ClusterBus, Redis, TlsFiles};
use crate::TestkitError;
use crate::scratch_dir::temp_dir;
use crate::tls::query_path;

/// N independent Redis masters (for Redlock): plain, or TLS only with one CA for
/// every master ([`start_tls`](RedisMasters::start_tls)).
#[derive(Debug)]
pub struct RedisMasters {
    /// The masters, each controllable on its own.
    pub nodes: Vec<Redis>,
    /// For TLS masters: the certificates, shared by all of them, and their dir.
    tls: Option<(TlsFiles, TempDir)>,
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
        Ok(Self { nodes, tls: None })
    }

    /// Starts `n` TLS-only masters whose certificates come from one throwaway CA;
    /// [`url`](Self::url) is `redlocks://…?tls_ca=CA`. With `mutual`, every master
    /// also requires a client certificate from that CA, and the URL carries one.
    ///
    /// # Errors
    ///
    /// As [`Redis::start_tls`].
    pub async fn start_tls(n: usize, mutual: bool) -> Result<Self, TestkitError> {
        let certs = temp_dir()?;
        let files = TlsFiles::generate(certs.path(), mutual)?;
        let mut nodes = Vec::with_capacity(n);
        for _ in 0..n {
            nodes.push(
                Redis::launch_tls(temp_dir()?, files.clone(), &[], ClusterBus::Default).await?,
            );
        }
        Ok(Self {
            nodes,
            tls: Some((files, certs)),
        })
    }

    /// `redlock://127.0.0.1:P1,127.0.0.1:P2,…`; for TLS masters
    /// `redlocks://…?tls_ca=CA` (plus `tls_cert` and `tls_key` when they require a
    /// client certificate).
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        match &self.tls {
            None => format!("redlock://{}", hosts.join(",")),
            Some((f, _)) => {
                let mut url = format!(
                    "redlocks://{}?tls_ca={}",
                    hosts.join(","),
                    query_path(&f.ca)
                );
                if f.mutual {
                    url.push_str(&format!(
                        "&tls_cert={}&tls_key={}",
                        query_path(&f.client_cert),
                        query_path(&f.client_key)
                    ));
                }
                url
            }
        }
    }

    /// The certificates of TLS masters.
    pub fn tls_files(&self) -> Option<&TlsFiles> {
        self.tls.as_ref().map(|(f, _)| f)
    }
}
