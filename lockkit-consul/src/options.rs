//! [`ConsulOptions`]: which agent, which ACL token, which session settings.

use std::fmt;
use std::time::Duration;

use lockkit_core::LockError;
use lockkit_core::tls::{Scheme, TlsFiles, TlsPaths};
use lockkit_core::url::{ParsedUrl, PrefixRule, Timeouts, percent_decode};

/// The URL schemes the Consul driver takes.
pub(crate) const SCHEMES: &[&str] = &["consul", "consuls"];

/// The session TTL asked for when the URL gives none.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(15);
/// The lock-delay asked for when the URL gives none (Consul's own default).
pub const DEFAULT_LOCK_DELAY: Duration = Duration::from_secs(15);

/// How long connecting, and each request (a blocking query gets its wait on top),
/// may take by default.
pub(crate) const DEFAULT_TIMEOUTS: Timeouts =
    Timeouts::new(Duration::from_secs(5), Duration::from_secs(10));

/// Settings for [`crate::ConsulDriver`], parsed from a URL. `Debug` and `Display`
/// never show the ACL token.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use lockkit::consul::ConsulOptions;
///
/// let o = ConsulOptions::from_url("consul://s3cret-token@10.0.0.1:8500?session_ttl_ms=20000&lock_delay_ms=0")?;
/// assert_eq!(o.base_url(), "http://10.0.0.1:8500");
/// assert_eq!(o.session_ttl(), Duration::from_secs(20));
/// assert_eq!(o.lock_delay(), Duration::ZERO);
/// assert!(o.has_token());
/// assert!(!format!("{o:?} {o}").contains("s3cret"));
/// # Ok::<(), lockkit::LockError>(())
/// ```
#[derive(Clone)]
pub struct ConsulOptions {
    pub(crate) base: String,
    pub(crate) token: Option<String>,
    pub(crate) prefix: String,
    pub(crate) session_ttl: Duration,
    pub(crate) lock_delay: Duration,
    pub(crate) datacenter: Option<String>,
    pub(crate) tls: Option<TlsFiles>,
    /// Connecting, and each request.
    pub(crate) timeouts: Timeouts,
    shown: String,
}

impl fmt::Debug for ConsulOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConsulOptions")
            .field("url", &self.shown)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("prefix", &self.prefix)
            .field("session_ttl", &self.session_ttl)
            .field("lock_delay", &self.lock_delay)
            .field("datacenter", &self.datacenter)
            .field("tls", &self.tls.is_some())
            .field("timeouts", &self.timeouts)
            .finish()
    }
}

impl fmt::Display for ConsulOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl ConsulOptions {
    /// Parses `consul://[token@]host:port[?options]`, or `consuls://…` for HTTPS.
    ///
    /// The ACL token is the URL's userinfo or `?token=`, else the environment's
    /// `CONSUL_HTTP_TOKEN`. Options:
    ///
    /// - `session_ttl_ms=N`: the session TTL (default 15000). Consul accepts 10 s to
    ///   24 h, and invalidates a session between TTL and 2×TTL after its last renew;
    ///   the driver renews every TTL/3.
    /// - `lock_delay_ms=N`: after a session is invalidated, its locks cannot be
    ///   taken for this long (default 15000; 0 disables; Consul caps it at 60 s).
    /// - `prefix=NAME`: the KV prefix locks live under (default `lockkit`).
    /// - `dc=NAME`: the datacenter.
    /// - `connect_timeout_ms=N` (default 5000) and `request_timeout_ms=N` (each
    ///   request, default 10000; a blocking query gets its wait on top).
    /// - for `consuls://`: `tls_ca=PATH`, `tls_cert=PATH&tls_key=PATH` (see
    ///   [`lockkit_core::tls`]).
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidUrl`] naming what is wrong, with the token redacted;
    /// [`LockError::Config`] for a TLS file that cannot be read.
    pub fn from_url(url: &str) -> Result<Self, LockError> {
        let mut parsed = ParsedUrl::parse(url, SCHEMES, "consul://host:8500")?;
        let https = parsed.scheme() == "consuls";
        let server = parsed.server()?;
        if !server.path.trim_end_matches('/').is_empty() {
            return Err(
                parsed.invalid("a Consul URL has no path; use ?prefix=NAME for a KV prefix")
            );
        }
        let host = server.hosts;
        lockkit_core::url::host_port(host, "the Consul HTTP API listens on 8500")
            .map_err(|why| parsed.invalid(why))?;
        let mut token = match server.userinfo {
            Some(t) => Some(
                percent_decode(t)
                    .ok_or_else(|| parsed.invalid("the token is not valid percent-encoding"))?,
            ),
            None => None,
        };
        let shown = parsed.shown();
        let query = &mut parsed.query;
        if let Some(t) = query.take("token")? {
            token = Some(t);
        }
        let mut options = Self {
            base: format!("{}://{host}", if https { "https" } else { "http" }),
            token: None,
            session_ttl: query
                .take_millis("session_ttl_ms", 1..=86_400_000)?
                .unwrap_or(DEFAULT_SESSION_TTL),
            lock_delay: query
                .take_millis("lock_delay_ms", 0..=60_000)?
                .unwrap_or(DEFAULT_LOCK_DELAY),
            datacenter: query.take_nonempty("dc")?,
            tls: None,
            timeouts: query.take_timeouts(DEFAULT_TIMEOUTS)?,
            // `/` trimmed at both ends: Consul's KV keys do not start with one.
            prefix: query.take_prefix("lockkit", PrefixRule::RelativePath)?,
            shown,
        };
        let tls_paths = TlsPaths::from_query(query)?;
        parsed.query.finish()?;
        let bad = |why: &str| LockError::invalid_url(url, why);
        options.token = token
            .or_else(|| std::env::var("CONSUL_HTTP_TOKEN").ok())
            .filter(|t| !t.is_empty());
        let scheme = Scheme {
            name: if https { "consuls" } else { "consul" },
            tls: https,
            built: cfg!(feature = "tls"),
            instead: "consuls:// instead of consul://",
        };
        options.tls = tls_paths.for_scheme(&scheme, &bad)?;
        Ok(options)
    }

    /// `http://host:port` (or `https://`).
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// Whether an ACL token is set (it is never shown).
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// The ACL token, for a client of your own (a benchmark's raw floor, say). Send
    /// it as the `X-Consul-Token` header; never log it.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// The session TTL asked for.
    pub fn session_ttl(&self) -> Duration {
        self.session_ttl
    }

    /// The lock-delay asked for.
    pub fn lock_delay(&self) -> Duration {
        self.lock_delay
    }

    /// The KV prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_urls_get_reasons_without_the_token() {
        for (url, needle) in [
            ("redis://h:1", "scheme"),
            ("consul://h", "no port"),
            ("consul://s3cret@h:1/path", "no path"),
            ("consul://h:1?session_ttl_ms=x&token=s3cret", "milliseconds"),
            ("consul://h:1?lock_delay_ms=60001", "milliseconds"),
            ("consul://h:1?x=1", "unknown option `x`"),
            (
                "consul://h:1?lock_dealy_ms=0",
                "did you mean `lock_delay_ms`",
            ),
            ("consul://s3cret@h:1?tls_ca=/x", "consuls://"),
        ] {
            let e = ConsulOptions::from_url(url).unwrap_err().to_string();
            assert!(e.contains(needle), "{url}: {e}");
            assert!(!e.contains("s3cret"), "{url}: {e}");
        }
    }
}
