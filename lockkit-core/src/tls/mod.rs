//! The `tls_ca`, `tls_cert` and `tls_key` URL options every TLS-capable driver
//! takes: collected while a URL's query is parsed, then read and checked at once,
//! so a wrong path or a file that is not PEM is reported when the URL is parsed,
//! naming the option and the path. Each driver hands the checked PEM bytes to its
//! client library.
//!
//! TLS is compiled in only with the `tls` feature (of this crate, and of each
//! driver). Without it, a TLS URL is refused when it is parsed, with a
//! [`LockError::Config`] that names the feature ([`TlsPaths::for_scheme`]).
//!
//! # Examples
//!
//! ```
//! use lockkit::LockError;
//! use lockkit_core::tls::TlsPaths;
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

#[cfg(feature = "tls")]
mod plain;

#[cfg(feature = "tls")]
pub use plain::{hint_if_plain, speaks_plain_tcp};

#[cfg(feature = "tls")]
use rustls::pki_types::pem::PemObject;
#[cfg(feature = "tls")]
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

    /// Reads and checks the files (only with the `tls` feature: nothing reads them
    /// without it).
    ///
    /// # Errors
    ///
    /// `bad(reason)` for a client certificate without its key, or the reverse;
    /// [`LockError::Config`] naming the option and the path for a file that cannot
    /// be read or holds no valid PEM (or, for `tls_ca`, no usable CA).
    #[cfg(feature = "tls")]
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
    /// the checked files for a TLS scheme (with no option given, the files are
    /// empty and the client verifies against its default roots), `None` for a
    /// plain scheme without options.
    ///
    /// `scheme` is the URL's, as it names itself in messages (`"etcds"`); `built`
    /// whether the driver was built with TLS (`cfg!(feature = "tls")` in the
    /// driver). `instead` tells a plain URL that gave TLS options what to write
    /// instead (`"etcds:// instead of etcd://"`).
    ///
    /// # Errors
    ///
    /// `bad(reason)` for TLS options on a plain scheme; [`LockError::Config`] for
    /// a TLS scheme in a build without TLS (see [`not_built`]); and as
    /// [`load`](Self::load).
    ///
    /// # Examples
    ///
    /// ```
    /// use lockkit::LockError;
    /// use lockkit_core::tls::{Scheme, TlsPaths};
    ///
    /// let bad = |why: &str| LockError::invalid_url("etcd://h:1", why);
    /// let plain = Scheme { name: "etcd", tls: false, built: true, instead: "etcds:// instead of etcd://" };
    /// assert!(TlsPaths::default().for_scheme(&plain, &bad)?.is_none());
    /// let mut paths = TlsPaths::default();
    /// paths.take("tls_ca", "/etc/ca.pem", &bad)?;
    /// let err = paths.for_scheme(&plain, &bad).unwrap_err();
    /// assert!(err.to_string().contains("use etcds:// instead of etcd://"), "{err}");
    ///
    /// let unbuilt = Scheme { name: "etcds", tls: true, built: false, ..plain };
    /// let err = TlsPaths::default().for_scheme(&unbuilt, &bad).unwrap_err();
    /// assert!(matches!(err, LockError::Config(_)) && err.to_string().contains("`tls` feature"), "{err}");
    /// # Ok::<(), LockError>(())
    /// ```
    pub fn for_scheme(
        self,
        scheme: &Scheme<'_>,
        bad: &dyn Fn(&str) -> LockError,
    ) -> Result<Option<TlsFiles>, LockError> {
        match (scheme.tls, self.is_empty()) {
            (true, _) if !scheme.built => Err(not_built(&format!("{}://", scheme.name))),
            // A driver built with TLS turns this crate's `tls` on.
            #[cfg(feature = "tls")]
            (true, _) => self.load(bad).map(Some),
            #[cfg(not(feature = "tls"))]
            (true, _) => Err(not_built(&format!("{}://", scheme.name))),
            (false, true) => Ok(None),
            (false, false) => Err(bad(&format!(
                "tls_ca, tls_cert and tls_key apply to TLS connections: use {}",
                scheme.instead
            ))),
        }
    }
}

/// A URL's scheme, as [`TlsPaths::for_scheme`] weighs it.
#[derive(Debug, Clone, Copy)]
pub struct Scheme<'a> {
    /// The scheme, as messages name it (`"rediss"`).
    pub name: &'a str,
    /// Whether it connects over TLS.
    pub tls: bool,
    /// Whether the driver was built with TLS: `cfg!(feature = "tls")` in the driver.
    pub built: bool,
    /// What a plain URL that gave TLS options writes instead
    /// (`"rediss:// instead of redis://"`).
    pub instead: &'a str,
}

/// The error for a TLS connection in a build without TLS: a
/// [`LockError::Config`] naming what asked for TLS (`"rediss://"`,
/// `"sslmode=require"`) and the feature that adds it.
pub fn not_built(what: &str) -> LockError {
    LockError::Config(format!(
        "{what} needs TLS, which this build of lockkit leaves out: \
         turn on the `tls` feature of the `lockkit` crate"
    ))
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

#[cfg(feature = "tls")]
fn file_error(option: &str, path: &str, why: impl fmt::Display) -> LockError {
    LockError::Config(format!("{option}={path}: {why}"))
}

#[cfg(feature = "tls")]
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

#[cfg(test)]
mod tests {
    use super::{Scheme, TlsPaths};
    use crate::LockError;

    fn bad(why: &str) -> LockError {
        LockError::invalid_url("x://h:1", why)
    }

    #[test]
    fn a_tls_scheme_in_a_driver_built_without_tls_is_a_config_error_naming_the_feature() {
        let scheme = Scheme {
            name: "rediss",
            tls: true,
            built: false,
            instead: "rediss:// instead of redis://",
        };
        let err = TlsPaths::default().for_scheme(&scheme, &bad).unwrap_err();
        assert!(matches!(err, LockError::Config(_)), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains("rediss://") && text.contains("`tls` feature"),
            "{text}"
        );
        // A plain scheme in the same build is untouched.
        let plain = Scheme {
            name: "redis",
            tls: false,
            ..scheme
        };
        assert!(
            TlsPaths::default()
                .for_scheme(&plain, &bad)
                .unwrap()
                .is_none()
        );
    }
}
