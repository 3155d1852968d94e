//! etcd: one node, or a 3-node cluster (heartbeat 10 ms, election 100 ms); plain
//! or with TLS on the client port (`start_tls`); and one node with etcd's default
//! timing (`start_with_default_flags`), as users run it.
//!
//! [`Etcd`] is here; [`member`] spawns members and waits for them, [`cluster`] runs
//! several.

mod cluster;
mod member;

use std::ops::{Deref, DerefMut};

use tempfile::TempDir;

use crate::process::Server;
use crate::scratch_dir::temp_dir;
use crate::tls::{CertAuthority, query_path};
use crate::{TestkitError, free_port};
pub use cluster::EtcdCluster;
use member::{Member, Timing, Tls, spawn_members, wait_healthy};

/// One etcd member on 127.0.0.1.
#[derive(Debug)]
pub struct Etcd {
    server: Server,
    name: String,
    tls: Option<Tls>,
    _dir: Option<TempDir>,
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

    /// `etcdctl` (API v3) pointed at this member, as a foreign client for the
    /// interoperability tests; add its arguments (`lock NAME`, …).
    ///
    /// # Errors
    ///
    /// [`TestkitError::NotFound`] if `etcdctl` is missing.
    pub fn etcdctl(&self) -> Result<tokio::process::Command, TestkitError> {
        member::etcdctl(self.server.port(), self.tls.as_ref()).ok_or_else(|| {
            TestkitError::NotFound {
                binary: "etcdctl".into(),
            }
        })
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
