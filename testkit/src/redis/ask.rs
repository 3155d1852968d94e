//! One inline command to a node on 127.0.0.1, plain or over TLS, for the setups
//! that watch and fault their nodes (sentinels, cluster failover) without a
//! Redis client.

use std::time::Duration;

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::TlsFiles;
use crate::TestkitError;

/// Makes the master on `port` drop its links to its replicas (`CLIENT KILL TYPE
/// replica`); they must number `expected`. Replicas that are paused cannot
/// reconnect, so nothing it is written from now on reaches them.
pub(crate) async fn drop_replicas(
    port: u16,
    tls: Option<&TlsFiles>,
    expected: usize,
) -> Result<(), TestkitError> {
    let dropped: Option<usize> = ask(port, tls, "CLIENT KILL TYPE replica")
        .await
        .and_then(|reply| reply.first()?.parse().ok());
    match dropped {
        Some(n) if n == expected => Ok(()),
        other => Err(TestkitError::Setup {
            step: "cutting replicas off".into(),
            detail: format!("the master on {port} dropped {other:?} replicas, not {expected}"),
        }),
    }
}

/// The replication offset `field` of the node on `port`: `master_repl_offset` on
/// a master, `slave_repl_offset` on a replica.
async fn repl_offset(port: u16, tls: Option<&TlsFiles>, field: &str) -> Option<u64> {
    let lines = ask(port, tls, "INFO replication").await?;
    let prefix = format!("{field}:");
    lines
        .iter()
        .find_map(|l| l.strip_prefix(&prefix)?.parse().ok())
}

/// Waits (30 s at most) until every replica on `replicas` has applied the
/// replication stream of the master on `master` as far as it stands now: a link
/// that is up can still lag behind what the master wrote.
pub(crate) async fn wait_caught_up(
    master: u16,
    replicas: &[u16],
    tls: Option<&TlsFiles>,
) -> Result<(), TestkitError> {
    let setup = |detail: String| TestkitError::Setup {
        step: "replicas catching up".into(),
        detail,
    };
    let target = repl_offset(master, tls, "master_repl_offset")
        .await
        .ok_or_else(|| setup(format!("the master on {master} did not say its offset")))?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    for &replica in replicas {
        while repl_offset(replica, tls, "slave_repl_offset")
            .await
            .is_none_or(|at| at < target)
        {
            if tokio::time::Instant::now() >= deadline {
                return Err(setup(format!(
                    "the replica on {replica} lags behind {target}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    Ok(())
}

/// The role (`master`, `slave`) the node on `port` reports.
pub(crate) async fn role(port: u16, tls: Option<&TlsFiles>) -> Option<String> {
    ask(port, tls, "ROLE").await?.into_iter().next()
}

/// Sends one inline command to the server on `port` (over TLS, trusting the CA of
/// `tls`, when given) and returns its reply's strings, flattened: each bulk
/// string, status or integer of an array, or the lines of a bulk string (`INFO`).
/// `None` on any error or after 1 s.
pub(crate) async fn ask(port: u16, tls: Option<&TlsFiles>, command: &str) -> Option<Vec<String>> {
    let exchange = async {
        let tcp = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
        match tls {
            None => exchange(tcp, command).await,
            Some(files) => {
                let name = ServerName::IpAddress(std::net::Ipv4Addr::LOCALHOST.into());
                let tls = connector(files)?.connect(name, tcp).await.ok()?;
                exchange(tls, command).await
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(1), exchange)
        .await
        .ok()
        .flatten()
}

/// A client that trusts the CA of `files`.
fn connector(files: &TlsFiles) -> Option<TlsConnector> {
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_file_iter(&files.ca).ok()? {
        roots.add(ca.ok()?).ok()?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .ok()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Some(TlsConnector::from(Arc::new(config)))
}

/// Writes `command` and reads one reply (RESP 2).
async fn exchange(stream: impl AsyncRead + AsyncWrite, command: &str) -> Option<Vec<String>> {
    let (read, mut write) = tokio::io::split(stream);
    write
        .write_all(format!("{command}\r\n").as_bytes())
        .await
        .ok()?;
    let mut lines = BufReader::new(read).lines();
    let mut out = Vec::new();
    let mut pending: usize = 1;
    while pending > 0 {
        let line = lines.next_line().await.ok()??;
        pending -= 1;
        match line.as_bytes().first()? {
            b'*' => pending += line[1..].parse::<usize>().unwrap_or(0),
            b'$' => {
                if line != "$-1" {
                    // A bulk string: its text, in as many lines as it has.
                    let len: usize = line[1..].parse().ok()?;
                    let mut read = 0;
                    while read < len {
                        let part = lines.next_line().await.ok()??;
                        read += part.len() + 2;
                        out.push(part);
                    }
                }
            }
            b'+' | b':' => out.push(line[1..].to_owned()),
            _ => return None,
        }
    }
    Some(out)
}
