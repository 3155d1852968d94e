//! [`EtcdOptions`]: which endpoints, which credentials, under which key prefix.

use std::fmt;

use std::time::Duration;

use lockkit_core::tls::{Scheme, TlsPaths};
use lockkit_core::url::{ParsedUrl, PrefixRule, Timeouts, credentials, host_port};
use lockkit_core::{LockError, redact_url};

use super::tls::Tls;

/// The URL schemes the etcd driver takes.
pub(crate) const SCHEMES: &[&str] = &["etcd", "etcds"];

/// How long connecting, and each request, may take by default.
pub(crate) const DEFAULT_TIMEOUTS: Timeouts =
    Timeouts::new(Duration::from_secs(5), Duration::from_secs(5));

/// The reason of an [`LockError::InvalidUrl`] (shown again with etcd's own
/// redaction of the URL).
fn reason(e: LockError) -> String {
    match e {
        LockError::InvalidUrl { reason, .. } => reason,
        other => other.to_string(),
    }
}

/// Settings for [`super::EtcdDriver`], parsed from a URL. `Debug` never shows the
/// password.
///
/// # Examples
///
/// ```
/// use lockkit::etcd::EtcdOptions;
///
/// let o = EtcdOptions::from_url("etcd://app:s3cret@10.0.0.1:2379,10.0.0.2:2379?prefix=locks")?;
/// assert_eq!(o.endpoints(), ["http://10.0.0.1:2379", "http://10.0.0.2:2379"]);
/// assert_eq!(o.prefix(), "locks");
/// assert!(!format!("{o:?}").contains("s3cret"));
///
/// // TLS: the files are read when the URL is parsed.
/// let err = EtcdOptions::from_url("etcds://app:s3cret@10.0.0.1:2379?tls_ca=/no/such/ca.pem").unwrap_err();
/// assert!(err.to_string().contains("tls_ca=/no/such/ca.pem"));
/// assert!(!err.to_string().contains("s3cret"));
/// # Ok::<(), lockkit::LockError>(())
/// ```
#[derive(Clone)]
pub struct EtcdOptions {
    pub(crate) endpoints: Vec<String>,
    pub(crate) user: Option<(String, String)>,
    pub(crate) prefix: String,
    /// `etcds://`: the CA (or system roots) and client certificate.
    pub(crate) tls: Option<Tls>,
    /// Connecting, and each request.
    pub(crate) timeouts: Timeouts,
    shown: String,
}

impl fmt::Debug for EtcdOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdOptions")
            .field("url", &self.shown)
            .field("endpoints", &self.endpoints)
            .field(
                "user",
                &self.user.as_ref().map(|(u, _)| lockkit_core::shown_user(u)),
            )
            .field("prefix", &self.prefix)
            .field("tls", &self.tls)
            .field("timeouts", &self.timeouts)
            .finish()
    }
}

/// `etcd://127.0.0.1:2379` with lockkit's defaults (prefix `lockkit`, 5 s
/// timeouts): for [`EtcdDriver::from_client`](super::EtcdDriver::from_client),
/// which ignores the address.
impl Default for EtcdOptions {
    fn default() -> Self {
        Self {
            endpoints: vec!["http://127.0.0.1:2379".to_owned()],
            user: None,
            prefix: "lockkit".to_owned(),
            tls: None,
            timeouts: DEFAULT_TIMEOUTS,
            shown: "etcd://127.0.0.1:2379".to_owned(),
        }
    }
}

impl fmt::Display for EtcdOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl EtcdOptions {
    /// Parses `etcd://[user:password@]host:port[,host:port…][?prefix=NAME]`, or
    /// `etcds://…` for TLS to every endpoint.
    ///
    /// User and password may be percent-encoded. Options:
    ///
    /// - `prefix=NAME`: the key prefix every lock lives under (default `lockkit`;
    ///   no control characters, trailing `/` dropped).
    /// - `connect_timeout_ms=N` (default 5000) and `request_timeout_ms=N` (each
    ///   request, default 5000).
    ///
    /// The scheme may be written in any case; any other option is an error that
    /// names it.
    ///
    /// TLS options (`etcds://` only; values are file paths, percent-encoded if
    /// they hold `&`, `=` or spaces), the same as the Redis driver's `rediss://`:
    ///
    /// - `tls_ca=PATH`: a PEM bundle of the CA certificates to verify the servers
    ///   against, instead of the system roots (which `etcds://` uses without it).
    /// - `tls_cert=PATH&tls_key=PATH`: a PEM client certificate (chain) and its
    ///   private key, for a server started with `--client-cert-auth` (mutual TLS).
    ///   Both or neither.
    ///
    /// The server's certificate must name the host as written in the URL (an IP
    /// address needs an IP subjectAltName).
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidUrl`] naming what is wrong (with the password redacted),
    /// also for `tls_*` options on a plain `etcd://` URL or a client certificate
    /// without its key; [`LockError::Config`] naming the option and the path for a
    /// TLS file that cannot be read or is not PEM.
    pub fn from_url(url: &str) -> Result<Self, LockError> {
        let bad = |why: &str| LockError::InvalidUrl {
            url: redact_url(url),
            reason: why.to_string(),
        };
        let mut parsed = ParsedUrl::parse(url, SCHEMES, "etcd://host:2379[,host:port…]")
            .map_err(|e| bad(&reason(e)))?;
        let tls_scheme = parsed.scheme() == "etcds";
        let server = parsed.server().map_err(|e| bad(&reason(e)))?;
        if !server.path.trim_end_matches('/').is_empty() {
            return Err(bad(
                "an etcd URL has no path; use ?prefix=NAME for a key prefix",
            ));
        }
        let query = &mut parsed.query;
        let prefix = query
            .take_prefix("lockkit", PrefixRule::Path)
            .map_err(|e| bad(&reason(e)))?;
        let timeouts = query
            .take_timeouts(DEFAULT_TIMEOUTS)
            .map_err(|e| bad(&reason(e)))?;
        let tls_paths = TlsPaths::from_query(query).map_err(|e| bad(&reason(e)))?;
        parsed.query.finish().map_err(|e| bad(&reason(e)))?;
        let user = server.userinfo.map(credentials).transpose().map_err(bad)?;
        let endpoints = server
            .host_list()
            .map(|h| endpoint(h, tls_scheme).map_err(|why| bad(&why)))
            .collect::<Result<Vec<_>, _>>()?;
        let scheme = Scheme {
            name: if tls_scheme { "etcds" } else { "etcd" },
            tls: tls_scheme,
            built: cfg!(feature = "tls"),
            instead: "etcds:// instead of etcd://",
        };
        let tls = tls_paths.for_scheme(&scheme, &bad)?.map(Tls);
        Ok(Self {
            endpoints,
            user,
            prefix,
            tls,
            timeouts,
            shown: redact_url(url),
        })
    }

    /// The endpoints, as `http://host:port` (`https://` for `etcds://`).
    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    /// The key prefix (default `lockkit`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Puts every lock under `prefix` (no control characters; a trailing `/` is
    /// dropped), as `?prefix=` does.
    ///
    /// # Errors
    ///
    /// [`LockError::Config`] for an empty prefix or one with control characters.
    pub fn with_prefix(mut self, prefix: &str) -> Result<Self, LockError> {
        self.prefix = PrefixRule::Path
            .check(prefix)
            .map_err(|why| LockError::Config(format!("prefix {prefix:?}: {why}")))?;
        Ok(self)
    }

    /// The user name, if the URL has credentials.
    pub fn user(&self) -> Option<&str> {
        self.user.as_ref().map(|(u, _)| u.as_str())
    }

    /// A raw etcd client of its own, set up as this URL says (endpoints,
    /// credentials, TLS, timeouts) and checked with one request: for tools that
    /// speak etcd directly beside lockkit, such as `lockkit bench`'s raw floor. It
    /// shares nothing with any driver; what it writes is not a lockkit hold.
    ///
    /// # Errors
    ///
    /// [`LockError::Connection`] if no endpoint answers within the connect
    /// timeout, or the credentials or certificates are refused.
    pub async fn connect_client(&self) -> Result<etcd_client::Client, LockError> {
        crate::connection::open(self).await
    }

    /// Whether the URL is `etcds://` (TLS to every endpoint).
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }
}

/// `host:port` → `http://host:port` (`https://` with `tls`), or why not.
fn endpoint(h: &str, tls: bool) -> Result<String, String> {
    host_port(h, "etcd listens on 2379")?;
    Ok(format!("{}://{h}", if tls { "https" } else { "http" }))
}

#[cfg(test)]
mod tests;
