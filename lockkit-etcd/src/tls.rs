//! TLS for `etcds://`: the `tls_ca`, `tls_cert` and `tls_key` URL options (the
//! same names, checks and errors as the Redis driver's `rediss://`).
//!
//! The files are read and checked when the URL is parsed, so a wrong path or a file
//! that is not PEM is reported at once, naming the option and the path. The
//! certificates go to etcd-client (tonic over rustls with the ring provider, or the
//! process's default rustls provider if the application installed one), which
//! verifies the server against `tls_ca` alone when it is given, else against the
//! system roots.

use std::fmt;

use etcd_client::{Certificate, Identity, TlsOptions};
use lockkit_core::LockError;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The `tls_*` paths given in a URL's query, before they are read.
#[derive(Debug, Default)]
pub(crate) struct TlsPaths {
    ca: Option<String>,
    cert: Option<String>,
    key: Option<String>,
}

impl TlsPaths {
    /// Takes `name=value` if it is a TLS option; `Ok(false)` if it is not one.
    /// `bad` makes the [`LockError::InvalidUrl`] for a value that is no path.
    pub(crate) fn take(
        &mut self,
        name: &str,
        value: &str,
        bad: &dyn Fn(&str) -> LockError,
    ) -> Result<bool, LockError> {
        let slot = match name {
            "tls_ca" => &mut self.ca,
            "tls_cert" => &mut self.cert,
            "tls_key" => &mut self.key,
            _ => return Ok(false),
        };
        let path = super::options::percent_decode(value)
            .ok_or_else(|| bad(&format!("{name} is not valid percent-encoded UTF-8")))?;
        if path.is_empty() {
            return Err(bad(&format!(
                "{name} needs a file path: {name}=/path/to/file.pem"
            )));
        }
        *slot = Some(path);
        Ok(true)
    }

    /// Whether no TLS option was given.
    pub(crate) fn is_empty(&self) -> bool {
        self.ca.is_none() && self.cert.is_none() && self.key.is_none()
    }

    /// Reads and checks the files, for an `etcds://` URL.
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidUrl`] (made by `bad`) for a client certificate without
    /// its key, or the reverse; [`LockError::Config`] naming the option and the
    /// path for a file that cannot be read or holds no valid PEM.
    pub(crate) fn load(self, bad: &dyn Fn(&str) -> LockError) -> Result<Tls, LockError> {
        let identity = match (self.cert, self.key) {
            (None, None) => None,
            (Some(cert), Some(key)) => Some(ClientIdentity {
                cert: read_certs("tls_cert", &cert)?,
                key: read_key("tls_key", &key)?,
                cert_path: cert,
                key_path: key,
            }),
            _ => {
                return Err(bad(
                    "a client certificate needs its key: give both tls_cert and tls_key",
                ));
            }
        };
        let ca = match self.ca {
            Some(path) => Some((read_ca(&path)?, path)),
            None => None,
        };
        Ok(Tls { ca, identity })
    }
}

/// The TLS settings of an `etcds://` URL, files read and checked.
#[derive(Clone)]
pub(crate) struct Tls {
    /// The CA bundle (PEM) and its path; `None`: the system roots.
    ca: Option<(Vec<u8>, String)>,
    /// A client certificate and key, for a server that requires one.
    identity: Option<ClientIdentity>,
}

#[derive(Clone)]
struct ClientIdentity {
    cert: Vec<u8>,
    key: Vec<u8>,
    cert_path: String,
    key_path: String,
}

impl fmt::Debug for Tls {
    /// Paths only: never the key's contents.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls")
            .field(
                "ca",
                &self
                    .ca
                    .as_ref()
                    .map_or("(system roots)", |(_, p)| p.as_str()),
            )
            .field("cert", &self.identity.as_ref().map(|i| &i.cert_path))
            .field("key", &self.identity.as_ref().map(|i| &i.key_path))
            .finish()
    }
}

impl Tls {
    /// The settings for etcd-client (tonic's `ClientTlsConfig`).
    pub(crate) fn options(&self) -> TlsOptions {
        let mut tls = TlsOptions::new();
        tls = match &self.ca {
            Some((pem, _)) => tls.ca_certificate(Certificate::from_pem(pem)),
            None => tls.with_native_roots(),
        };
        if let Some(id) = &self.identity {
            tls = tls.identity(Identity::from_pem(&id.cert, &id.key));
        }
        tls
    }

    /// Whether the server is verified against `tls_ca` (else the system roots).
    pub(crate) fn has_ca(&self) -> bool {
        self.ca.is_some()
    }

    /// Whether a client certificate is presented.
    pub(crate) fn has_client_cert(&self) -> bool {
        self.identity.is_some()
    }
}

fn file_error(option: &str, path: &str, why: impl fmt::Display) -> LockError {
    LockError::Config(format!("{option}={path}: {why}"))
}

fn read(option: &str, path: &str) -> Result<Vec<u8>, LockError> {
    std::fs::read(path).map_err(|e| file_error(option, path, format!("cannot read the file: {e}")))
}

/// A PEM file with one or more certificates, all parseable.
fn read_certs(option: &str, path: &str) -> Result<Vec<u8>, LockError> {
    let pem = read(option, path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_error(option, path, format!("not a valid PEM certificate: {e}")))?;
    if certs.is_empty() {
        return Err(file_error(
            option,
            path,
            "holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
        ));
    }
    Ok(pem)
}

/// A CA bundle: certificates that rustls accepts as trust anchors (tonic would
/// skip one it cannot parse without a word).
fn read_ca(path: &str) -> Result<Vec<u8>, LockError> {
    let pem = read_certs("tls_ca", path)?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem).flatten() {
        roots.add(cert).map_err(|e| {
            file_error(
                "tls_ca",
                path,
                format!("a certificate is not usable as a CA: {e}"),
            )
        })?;
    }
    Ok(pem)
}

/// A PEM private key (PKCS#8, PKCS#1 or SEC1).
fn read_key(option: &str, path: &str) -> Result<Vec<u8>, LockError> {
    let pem = read(option, path)?;
    PrivateKeyDer::from_pem_slice(&pem)
        .map_err(|e| file_error(option, path, format!("holds no valid PEM private key: {e}")))?;
    Ok(pem)
}

/// Advice to add to a connection error: for a TLS URL whose error is about a
/// certificate or the handshake, what to check; for a plain URL whose connection
/// was closed at once, that the server may want TLS.
pub(crate) fn hint(tls: Option<&Tls>, message: &str) -> String {
    let m = message.to_ascii_lowercase();
    let closed = ["connection closed", "connection reset", "broken pipe"]
        .iter()
        .any(|c| m.contains(c));
    match tls {
        Some(tls)
            if m.contains("certificate")
                || m.contains("unknownissuer")
                || m.contains("handshake") =>
        {
            let roots = if tls.has_ca() {
                "a CA in tls_ca"
            } else {
                "a CA in the system roots (no tls_ca given)"
            };
            let client = if tls.has_client_cert() {
                ""
            } else {
                " A server started with --client-cert-auth also needs tls_cert and tls_key."
            };
            format!(
                " (TLS: is the server's certificate signed by {roots}, and does it name \
                 the host as written in the URL?{client})"
            )
        }
        Some(tls) if closed && !tls.has_client_cert() => {
            " (TLS: the server closed the connection: if it was started with \
             --client-cert-auth, give tls_cert and tls_key)"
                .into()
        }
        None if closed => {
            " (the server closed the connection: if it serves TLS, use etcds://)".into()
        }
        _ => String::new(),
    }
}
