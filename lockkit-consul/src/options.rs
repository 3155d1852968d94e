//! [`ConsulOptions`]: which agent, which ACL token, which session settings.

use std::fmt;
use std::time::Duration;

use lockkit_core::tls::{self, TlsFiles, TlsPaths};
use lockkit_core::url::{percent_decode, split_userinfo};
use lockkit_core::{LockError, redact_url};

/// The session TTL asked for when the URL gives none.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(15);
/// The lock-delay asked for when the URL gives none (Consul's own default).
pub const DEFAULT_LOCK_DELAY: Duration = Duration::from_secs(15);

/// Settings for [`crate::ConsulDriver`], parsed from a URL. `Debug` and `Display`
/// never show the ACL token.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use lockkit_consul::ConsulOptions;
///
/// let o = ConsulOptions::from_url("consul://s3cret-token@10.0.0.1:8500?session_ttl_ms=20000&lock_delay_ms=0")?;
/// assert_eq!(o.base_url(), "http://10.0.0.1:8500");
/// assert_eq!(o.session_ttl(), Duration::from_secs(20));
/// assert_eq!(o.lock_delay(), Duration::ZERO);
/// assert!(o.has_token());
/// assert!(!format!("{o:?} {o}").contains("s3cret"));
/// # Ok::<(), lockkit_core::LockError>(())
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
    /// - for `consuls://`: `tls_ca=PATH`, `tls_cert=PATH&tls_key=PATH` (see
    ///   [`lockkit_core::tls`]).
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidUrl`] naming what is wrong, with the token redacted;
    /// [`LockError::Config`] for a TLS file that cannot be read.
    pub fn from_url(url: &str) -> Result<Self, LockError> {
        let shown = redact_url(url);
        let bad = |why: &str| LockError::InvalidUrl {
            url: shown.clone(),
            reason: why.to_string(),
        };
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| bad("a Consul URL looks like consul://host:port"))?;
        let https = match scheme {
            "consul" => false,
            "consuls" => true,
            _ => return Err(bad("the scheme must be consul (or consuls for HTTPS)")),
        };
        let (base, query) = rest.split_once('?').unwrap_or((rest, ""));
        let base = base.strip_suffix('/').unwrap_or(base);
        if base.contains('/') {
            return Err(bad(
                "a Consul URL has no path; use ?prefix=NAME for a KV prefix",
            ));
        }
        let (userinfo, host) = split_userinfo(base);
        lockkit_core::url::host_port(host, "the Consul HTTP API listens on 8500")
            .map_err(|why| bad(&why))?;
        let mut token = match userinfo {
            Some(t) => Some(
                percent_decode(t).ok_or_else(|| bad("the token is not valid percent-encoding"))?,
            ),
            None => None,
        };
        let mut options = Self {
            base: format!("{}://{host}", if https { "https" } else { "http" }),
            token: None,
            prefix: "lockkit".into(),
            session_ttl: DEFAULT_SESSION_TTL,
            lock_delay: DEFAULT_LOCK_DELAY,
            datacenter: None,
            tls: None,
            shown: shown.clone(),
        };
        let mut tls_paths = TlsPaths::default();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = percent_decode(value)
                .ok_or_else(|| bad(&format!("{name} is not valid percent-encoded UTF-8")))?;
            if tls::OPTION_NAMES.contains(&name) {
                tls_paths.take(name, &value, &bad)?;
                continue;
            }
            match name {
                "token" => token = Some(value),
                "session_ttl_ms" => options.session_ttl = millis(&value, 1, 86_400_000, &bad)?,
                "lock_delay_ms" => options.lock_delay = millis(&value, 0, 60_000, &bad)?,
                "prefix" => {
                    let v = value.trim_matches('/');
                    if v.is_empty() || v.chars().any(char::is_control) {
                        return Err(bad("prefix must be non-empty with no control characters"));
                    }
                    options.prefix = v.to_string();
                }
                "dc" => options.datacenter = Some(value),
                _ => {
                    return Err(bad(
                        "unknown option; the options are token, session_ttl_ms, lock_delay_ms, \
                         prefix, dc, and for consuls:// tls_ca, tls_cert, tls_key",
                    ));
                }
            }
        }
        options.token = token
            .or_else(|| std::env::var("CONSUL_HTTP_TOKEN").ok())
            .filter(|t| !t.is_empty());
        options.tls = match (https, tls_paths.is_empty()) {
            (true, _) => Some(tls_paths.load(&bad)?),
            (false, true) => None,
            (false, false) => {
                return Err(bad(
                    "tls_ca, tls_cert and tls_key apply to HTTPS: use consuls:// instead of consul://",
                ));
            }
        };
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

fn millis(
    value: &str,
    min: u64,
    max: u64,
    bad: &dyn Fn(&str) -> LockError,
) -> Result<Duration, LockError> {
    value
        .parse::<u64>()
        .ok()
        .filter(|ms| (min..=max).contains(ms))
        .map(Duration::from_millis)
        .ok_or_else(|| {
            bad(&format!(
                "expected a whole number of milliseconds from {min} to {max}"
            ))
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn bad_urls_get_reasons_without_the_token() {
        for (url, needle) in [
            ("redis://h:1", "scheme"),
            ("consul://h", "no port"),
            ("consul://s3cret@h:1/path", "no path"),
            ("consul://h:1?session_ttl_ms=x&token=s3cret", "milliseconds"),
            ("consul://h:1?lock_delay_ms=60001", "milliseconds"),
            ("consul://h:1?x=1", "unknown option"),
            ("consul://s3cret@h:1?tls_ca=/x", "consuls://"),
        ] {
            let e = ConsulOptions::from_url(url).unwrap_err().to_string();
            assert!(e.contains(needle), "{url}: {e}");
            assert!(!e.contains("s3cret"), "{url}: {e}");
        }
    }
}
