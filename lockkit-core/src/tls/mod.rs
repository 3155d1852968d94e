//! The `tls_ca`, `tls_cert` and `tls_key` URL options every TLS-capable driver
//! takes (feature `tls`): collected while a URL's query is parsed, then read and
//! checked at once, so a wrong path or a file that is not PEM is reported when the
//! URL is parsed, naming the option and the path. Each driver hands the checked PEM
//! bytes to its client library.
//!
//! # Examples
//!
//! ```
//! use lockkit::LockError;
//! use lockkit::driver::tls::TlsPaths;
//!
//! let bad = |why: &str| LockError::invalid_url("rediss://h:1", why);
//! let mut paths = TlsPaths::default();
//! assert!(!paths.take("prefix", "app", &bad)?); // not a TLS option
//! assert!(paths.take("tls_ca", "/nonexistent/ca.pem", &bad)?);
//! let err = paths.load(&bad).unwrap_err();
//! assert!(err.to_string().contains("tls_ca=/nonexistent/ca.pem"));
//! # Ok::<(), LockError>(())
//! ```

use std::fmt;

mod plain;

pub use plain::{hint_if_plain, speaks_plain_tcp};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::LockError;
use crate::url::Query;

/// The option names, for drivers that strip them before a URL reaches their client.
pub const OPTION_NAMES: [&str; 3] = ["tls_ca", "tls_cert", "tls_key"];

/// The `tls_*` paths given in a URL's query, before they are read.
#[derive(Debug, Default)]
pub struct TlsPaths {
    ca: Option<String>,
    cert: Option<String>,
    key: Option<String>,
}

impl TlsPaths {
    /// Takes `name=path` (the path already percent-decoded) if `name` is a TLS
    /// option; `Ok(false)` if it is not one.
    ///
    /// # Errors
    ///
    /// `bad(reason)` (an [`LockError::InvalidUrl`]) for an empty path.
    pub fn take(
        &mut self,
        name: &str,
        path: &str,
        bad: &dyn Fn(&str) -> LockError,
    ) -> Result<bool, LockError> {
        let slot = match name {
            "tls_ca" => &mut self.ca,
            "tls_cert" => &mut self.cert,
            "tls_key" => &mut self.key,
            _ => return Ok(false),
        };
        if path.is_empty() {
            return Err(bad(&format!(
                "{name} needs a file path: {name}=/path/to/file.pem"
            )));
        }
        *slot = Some(path.to_string());
        Ok(true)
    }

    /// Takes `tls_ca`, `tls_cert` and `tls_key` (the paths percent-decoded) from a
    /// URL's options.
    ///
    /// # Errors
    ///
    /// As [`Query::take`], and for an empty path.
    pub fn from_query(query: &mut Query) -> Result<Self, LockError> {
        let mut paths = Self::default();
        for name in OPTION_NAMES {
            if let Some(path) = query.take(name)? {
                let bad = |why: &str| query.invalid(why);
                paths.take(name, &path, &bad)?;
            }
        }
        Ok(paths)
    }

    /// Whether no TLS option was given.
    pub fn is_empty(&self) -> bool {
        self.ca.is_none() && self.cert.is_none() && self.key.is_none()
    }

    /// Reads and checks the files.
    ///
    /// # Errors
    ///
    /// `bad(reason)` for a client certificate without its key, or the reverse;
    /// [`LockError::Config`] naming the option and the path for a file that cannot
    /// be read or holds no valid PEM (or, for `tls_ca`, no usable CA).
    pub fn load(self, bad: &dyn Fn(&str) -> LockError) -> Result<TlsFiles, LockError> {
        let identity = match (self.cert, self.key) {
            (None, None) => None,
            (Some(cert), Some(key)) => Some(ClientIdentity {
                cert: PemFile::certificates("tls_cert", cert)?,
                key: PemFile::private_key("tls_key", key)?,
            }),
            _ => {
                return Err(bad(
                    "a client certificate needs its key: give both tls_cert and tls_key",
                ));
            }
        };
        let ca = self.ca.map(PemFile::ca).transpose()?;
        Ok(TlsFiles { ca, identity })
    }
}

impl TlsPaths {
    /// What a URL's scheme and its TLS options add up to, for every driver alike:
    /// the checked files for a TLS scheme (`tls_scheme`; with no option given, the
    /// files are empty and the client verifies against its default roots), `None`
    /// for a plain scheme without options.
    ///
    /// `instead` tells a plain URL that gave TLS options what to write instead
    /// (`"etcds:// instead of etcd://"`).
    ///
    /// # Errors
    ///
    /// `bad(reason)` for TLS options on a plain scheme, and as [`load`](Self::load).
    ///
    /// # Examples
    ///
    /// ```
    /// use lockkit::LockError;
    /// use lockkit::driver::tls::TlsPaths;
    ///
    /// let bad = |why: &str| LockError::invalid_url("etcd://h:1", why);
    /// assert!(TlsPaths::default().for_scheme(false, "etcds:// instead of etcd://", &bad)?.is_none());
    /// let mut paths = TlsPaths::default();
    /// paths.take("tls_ca", "/etc/ca.pem", &bad)?;
    /// let err = paths.for_scheme(false, "etcds:// instead of etcd://", &bad).unwrap_err();
    /// assert!(err.to_string().contains("use etcds:// instead of etcd://"), "{err}");
    /// # Ok::<(), LockError>(())
    /// ```
    pub fn for_scheme(
        self,
        tls_scheme: bool,
        instead: &str,
        bad: &dyn Fn(&str) -> LockError,
    ) -> Result<Option<TlsFiles>, LockError> {
        match (tls_scheme, self.is_empty()) {
            (true, _) => self.load(bad).map(Some),
            (false, true) => Ok(None),
            (false, false) => Err(bad(&format!(
                "tls_ca, tls_cert and tls_key apply to TLS connections: use {instead}"
            ))),
        }
    }
}

/// A checked PEM file: its path (for messages) and its contents. `Debug` shows the
/// path only, never the contents (a private key).
#[derive(Clone)]
pub struct PemFile {
    /// Where it was read from.
    pub path: String,
    /// The PEM text.
    pub pem: Vec<u8>,
}

impl fmt::Debug for PemFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path)
    }
}

/// A client certificate and its key, for servers that require one.
#[derive(Debug, Clone)]
pub struct ClientIdentity {
    /// The certificate chain (`tls_cert`).
    pub cert: PemFile,
    /// Its private key (`tls_key`).
    pub key: PemFile,
}

/// The TLS files of a URL, read and checked.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The CA bundle to verify the server with (`tls_ca`); `None`: the system roots.
    pub ca: Option<PemFile>,
    /// A client certificate and key (`tls_cert`, `tls_key`).
    pub identity: Option<ClientIdentity>,
}

fn file_error(option: &str, path: &str, why: impl fmt::Display) -> LockError {
    LockError::Config(format!("{option}={path}: {why}"))
}

impl PemFile {
    fn read(option: &str, path: String) -> Result<Self, LockError> {
        let pem = std::fs::read(&path)
            .map_err(|e| file_error(option, &path, format!("cannot read the file: {e}")))?;
        Ok(Self { path, pem })
    }

    /// A PEM file with one or more certificates, all parseable.
    fn certificates(option: &str, path: String) -> Result<Self, LockError> {
        let file = Self::read(option, path)?;
        let certs = CertificateDer::pem_slice_iter(&file.pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| {
                file_error(
                    option,
                    &file.path,
                    format!("not a valid PEM certificate: {e}"),
                )
            })?;
        if certs.is_empty() {
            return Err(file_error(
                option,
                &file.path,
                "holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
            ));
        }
        Ok(file)
    }

    /// A CA bundle: certificates that rustls accepts as trust anchors (a client
    /// library might skip one it cannot parse without a word).
    fn ca(path: String) -> Result<Self, LockError> {
        let file = Self::certificates("tls_ca", path)?;
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&file.pem).flatten() {
            roots.add(cert).map_err(|e| {
                file_error(
                    "tls_ca",
                    &file.path,
                    format!("a certificate is not usable as a CA: {e}"),
                )
            })?;
        }
        Ok(file)
    }

    /// A PEM private key (PKCS#8, PKCS#1 or SEC1).
    fn private_key(option: &str, path: String) -> Result<Self, LockError> {
        let file = Self::read(option, path)?;
        PrivateKeyDer::from_pem_slice(&file.pem).map_err(|e| {
            file_error(
                option,
                &file.path,
                format!("holds no valid PEM private key: {e}"),
            )
        })?;
        Ok(file)
    }
}
