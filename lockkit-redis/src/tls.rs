//! TLS for `rediss://`: the `tls_ca`, `tls_cert` and `tls_key` URL options, and the
//! one place a `redis::Client` is built from a node URL and those settings.
//!
//! The files are read and checked when the URL is parsed, so a wrong path or a file
//! that is not PEM is reported at once, naming the option and the path. The
//! certificates go to the redis crate (rustls with the ring provider), which verifies
//! the server against `tls_ca` alone when it is given, else against the system roots.

use std::sync::Once;

use lockkit_core::LockError;
use redis::{ClientTlsConfig, TlsCertificates};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The TLS options a URL may carry (stripped before it reaches the redis crate).
pub(crate) const OPTION_NAMES: [&str; 3] = ["tls_ca", "tls_cert", "tls_key"];

/// The `tls_*` paths given in a URL's query, before they are read.
#[derive(Debug, Default)]
pub(crate) struct TlsPaths {
    ca: Option<String>,
    cert: Option<String>,
    key: Option<String>,
}

impl TlsPaths {
    /// Takes `name=value` if it is a TLS option; `Ok(false)` if it is not one.
    pub(crate) fn take(&mut self, url: &str, name: &str, value: &str) -> Result<bool, LockError> {
        let slot = match name {
            "tls_ca" => &mut self.ca,
            "tls_cert" => &mut self.cert,
            "tls_key" => &mut self.key,
            _ => return Ok(false),
        };
        let path = percent_decode(value);
        if path.is_empty() {
            return Err(LockError::invalid_url(
                url,
                format!("{name} needs a file path: {name}=/path/to/file.pem"),
            ));
        }
        *slot = Some(path);
        Ok(true)
    }

    /// Whether no TLS option was given.
    pub(crate) fn is_empty(&self) -> bool {
        self.ca.is_none() && self.cert.is_none() && self.key.is_none()
    }

    /// Reads and checks the files. `None` when no option was given (a `rediss://`
    /// connection then verifies the server against the system roots).
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidUrl`] for options on a plain (`redis://`) URL, or a
    /// client certificate without its key (or the reverse); [`LockError::Config`]
    /// naming the option and the path for a file that cannot be read or holds no
    /// valid PEM.
    pub(crate) fn load(
        self,
        url: &str,
        tls_scheme: bool,
    ) -> Result<Option<TlsCertificates>, LockError> {
        if self.is_empty() {
            return Ok(None);
        }
        if !tls_scheme {
            return Err(LockError::invalid_url(
                url,
                "tls_ca, tls_cert and tls_key apply to TLS connections: use rediss:// \
                 (or rediss-cluster://) instead of redis://",
            ));
        }
        let client_tls = match (self.cert, self.key) {
            (None, None) => None,
            (Some(cert), Some(key)) => Some(ClientTlsConfig {
                client_cert: read_certs("tls_cert", &cert)?,
                client_key: read_key("tls_key", &key)?,
            }),
            _ => {
                return Err(LockError::invalid_url(
                    url,
                    "a client certificate needs its key: give both tls_cert and tls_key",
                ));
            }
        };
        let root_cert = match self.ca {
            Some(ca) => Some(read_ca(&ca)?),
            None => None,
        };
        Ok(Some(TlsCertificates {
            client_tls,
            root_cert,
        }))
    }
}

/// `%XX` escapes in a query value, decoded (a path may hold `&`, `=` or spaces).
fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn file_error(option: &str, path: &str, why: impl std::fmt::Display) -> LockError {
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

/// A CA bundle: certificates that rustls accepts as trust anchors.
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

/// Advice to add to a connection error about a certificate (empty otherwise).
pub(crate) fn hint(message: &str) -> &'static str {
    let m = message.to_ascii_lowercase();
    if m.contains("certificate") || m.contains("unknownissuer") {
        " (TLS: is the server's certificate signed by a CA in tls_ca, or in the system \
         roots without tls_ca, and does it name the host in the URL? A server that \
         requires a client certificate needs tls_cert and tls_key)"
    } else {
        ""
    }
}

/// Makes ring the process's rustls crypto provider, once, unless the application
/// installed one already (then that one is used).
pub(crate) fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // An error means a provider is installed already: fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A client for one node URL (`redis://` or `rediss://`, options stripped), with the
/// TLS certificates if any. The one place a `redis::Client` is built.
pub(crate) fn client(
    node: &str,
    certs: Option<&TlsCertificates>,
) -> redis::RedisResult<redis::Client> {
    if node.starts_with("rediss://") {
        install_crypto_provider();
    }
    match certs {
        Some(certs) => redis::Client::build_with_tls(node, certs.clone()),
        None => redis::Client::open(node),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_escapes_in_paths_are_decoded() {
        assert_eq!(percent_decode("/a%20b/c%26d.pem"), "/a b/c&d.pem");
        assert_eq!(percent_decode("/x%2"), "/x%2");
        assert_eq!(percent_decode("/x%zz"), "/x%zz");
    }
}
