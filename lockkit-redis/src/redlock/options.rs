//! [`RedlockOptions`]: which masters, and how patient to be with them.

use std::fmt;
use std::time::Duration;

use lockkit_core::tls::TlsPaths;
use lockkit_core::url::{ParsedUrl, PrefixRule, Timeouts, redact_urls_in, reencoded_userinfo};
use lockkit_core::{LockError, redact_url};

use crate::eviction::{Eviction, take_eviction};
use crate::keys::KeyLayout;
use crate::options::{FenceSeed, WakeMode};
use crate::url::{DEFAULT_PREFIX, take_fence_seed, take_keys, take_prefix, take_wake};

/// The URL schemes the Redlock driver takes.
pub(crate) const SCHEMES: &[&str] = &["redlock", "redlocks"];

/// The fixed part of the clock-drift allowance (the other part is 1 % of the TTL).
pub(crate) const DEFAULT_DRIFT: Duration = Duration::from_millis(2);
/// The mean delay before retrying a failed attempt.
pub(crate) const DEFAULT_RETRY: Duration = Duration::from_millis(100);
/// The longest a single request to one master may take.
pub(crate) const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_millis(250);
/// The longest connecting to one master may take.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// Settings for [`super::RedlockDriver`]. `Debug` never shows a password.
///
/// Build them from a URL with [`from_url`](Self::from_url), or from a list of
/// `redis://` URLs (one per master, each with its own credentials) with
/// [`from_masters`](Self::from_masters) and the setters:
///
/// ```
/// use std::time::Duration;
/// use lockkit::redis::RedlockOptions;
///
/// let a = RedlockOptions::from_url("redlock://:s3cret@10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379?drift_ms=5")?;
/// assert_eq!(a.quorum(), 2);
/// assert!(!format!("{a:?}").contains("s3cret"));
///
/// let b = RedlockOptions::from_masters(["redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"])?
///     .prefix("billing")?
///     .retry_delay(Duration::from_millis(50));
/// assert_eq!(b.masters(), 3);
/// # Ok::<(), lockkit::LockError>(())
/// ```
///
/// Redlock needs at least one master, but fewer than three is pointless: with one
/// master it is the single-instance driver with extra round trips, and with two the
/// quorum is both, so losing either stops all locking. Use 3 or 5 independent masters
/// (not replicas of each other).
#[derive(Clone)]
pub struct RedlockOptions {
    pub(crate) masters: Vec<String>,
    pub(crate) shown: Vec<String>,
    pub(crate) prefix: String,
    pub(crate) drift: Duration,
    pub(crate) retry: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) fence_seed: FenceSeed,
    pub(crate) keys: KeyLayout,
    pub(crate) wake: WakeMode,
    /// `eviction=refuse|accept`.
    pub(crate) eviction: Eviction,
    /// From `tls_ca`/`tls_cert`/`tls_key` (`redlocks://`): the same for every
    /// master; `None` for plain masters, or TLS against the system roots.
    pub(crate) tls: Option<crate::tls::Certs>,
}

impl fmt::Debug for RedlockOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedlockOptions")
            .field("masters", &self.shown)
            .field("prefix", &self.prefix)
            .field("fence_seed", &self.fence_seed)
            .field("drift", &self.drift)
            .field("retry", &self.retry)
            .field("request_timeout", &self.request_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("wake", &self.wake)
            .field("eviction", &self.eviction)
            .field("tls", &self.tls)
            .finish()
    }
}

impl RedlockOptions {
    fn new(masters: Vec<String>, shown: Vec<String>) -> Self {
        Self {
            masters,
            shown,
            prefix: DEFAULT_PREFIX.to_string(),
            drift: DEFAULT_DRIFT,
            retry: DEFAULT_RETRY,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            fence_seed: FenceSeed::Counter,
            keys: KeyLayout::Tagged,
            wake: WakeMode::Notify,
            eviction: Eviction::Refuse,
            tls: None,
        }
    }

    /// Parses `redlock://[user:password@]host1:port1,host2:port2,…[/db][?prefix=NAME&drift_ms=N&retry_ms=N&request_timeout_ms=N&connect_timeout_ms=N&fence_seed=counter|clock&wake=notify|poll&keys=tagged|plain&eviction=refuse|accept]`
    /// (`fence_seed`: see [`crate::FenceSeed`]; each master seeds its own counter;
    /// `wake`: see [`RedlockOptions::wake`]; `eviction`: see
    /// [`RedlockOptions::eviction`], `accept` is unsafe).
    ///
    /// The credentials and the database apply to every master; a host without a port
    /// uses 6379. `drift_ms` is the fixed part of the clock-drift allowance (default
    /// 2; the allowance is 1 % of the TTL plus this), `retry_ms` the mean delay before
    /// a failed attempt is retried (default 100), `request_timeout_ms` the cap on one
    /// request to one master (default 250; `timeout_ms` is its older name), and
    /// `connect_timeout_ms` the cap on connecting to one master (default 1000). Any
    /// other option is an error that names it.
    ///
    /// `redlocks://` reaches every master over TLS, with the same options as the
    /// single-server `rediss://`, applied to every master: `tls_ca=PATH` (verify
    /// them against these CA certificates only; without it, the system roots) and
    /// `tls_cert=PATH&tls_key=PATH` (a client certificate, for masters that
    /// require one). The files are read when the URL is parsed.
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidUrl`] naming what is wrong; the password is never shown.
    pub fn from_url(url: &str) -> Result<Self, LockError> {
        let mut parsed = ParsedUrl::parse(
            url,
            SCHEMES,
            "redlock://h1:6379,h2:6379,h3:6379 (the masters, comma-separated; redlocks:// for TLS)",
        )?;
        let (node_scheme, tls_scheme) = match parsed.scheme() {
            "redlocks" => ("rediss", true),
            _ => ("redis", false),
        };
        let server = parsed.server()?;
        let bad = |why: String| LockError::invalid_url(url, why);
        if server.hosts.is_empty() {
            return Err(bad(
                "no masters listed; write them comma-separated: redlock://h1:6379,h2:6379,h3:6379"
                    .into(),
            ));
        }
        // Re-encoded for redis-rs's parser: a password written with an
        // unescaped `/` or `@` reaches every master whole.
        let auth = match server.userinfo {
            Some(u) => format!("{}@", reencoded_userinfo(u).map_err(|why| bad(why.into()))?),
            None => String::new(),
        };
        let mut masters = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        for (i, host) in server.host_list().enumerate() {
            if host.is_empty() {
                return Err(bad(format!("master #{} is empty (a stray comma?)", i + 1)));
            }
            let port = host
                .rsplit_once(':')
                .filter(|(h, _)| !h.ends_with(':'))
                .map(|(_, p)| p);
            if let Some(port) = port
                && !matches!(port.parse::<u16>(), Ok(p) if p > 0)
            {
                return Err(bad(format!(
                    "master `{host}` has port `{port}`, which is not a number from 1 to 65535"
                )));
            }
            if seen.contains(&host) {
                return Err(bad(format!(
                    "master `{host}` is listed twice; Redlock needs independent masters"
                )));
            }
            seen.push(host);
            masters.push(format!("{node_scheme}://{auth}{host}{}", server.path));
        }
        let shown = masters.iter().map(|m| redact_url(m)).collect();
        let mut options = Self::new(masters, shown);
        let query = &mut parsed.query;
        options.prefix = take_prefix(query)?;
        options.keys = take_keys(query)?;
        const MS: std::ops::RangeInclusive<u64> = 1..=3_600_000;
        if let Some(drift) = query.take_millis("drift_ms", 0..=3_600_000)? {
            options.drift = drift;
        }
        if let Some(retry) = query.take_millis("retry_ms", MS)? {
            options.retry = retry;
        }
        let timeouts = query.take_timeouts(Timeouts::new(
            DEFAULT_CONNECT_TIMEOUT,
            DEFAULT_REQUEST_TIMEOUT,
        ))?;
        options.connect_timeout = timeouts.connect;
        options.request_timeout = match query.take_millis("timeout_ms", MS)? {
            // The older name of request_timeout_ms.
            Some(t) => t,
            None => timeouts.request,
        };
        options.fence_seed = take_fence_seed(query)?;
        options.wake = take_wake(query)?;
        options.eviction = take_eviction(query)?;
        let tls_paths = TlsPaths::from_query(query)?;
        parsed.query.finish()?;
        options.tls = crate::tls::load(
            tls_paths,
            url,
            if tls_scheme { "redlocks" } else { "redlock" },
            tls_scheme,
            "redlocks:// instead of redlock://",
        )?;
        for m in &options.masters {
            crate::tls::client(m, options.tls.as_ref()).map_err(|e| {
                bad(format!(
                    "a master's address is not valid: {}",
                    redact_urls_in(&e.to_string())
                ))
            })?;
        }
        Ok(options)
    }

    /// One master per `redis://[user:password@]host:port[/db]` URL, each with its own
    /// credentials; tune the rest with the setters.
    ///
    /// # Errors
    ///
    /// [`LockError::Config`] for an empty list; [`LockError::InvalidUrl`] for a URL
    /// that is not `redis://` or `rediss://` (a `rediss://` master is verified
    /// against the system roots; for a CA of your own, use a `redlocks://` URL), or
    /// cannot be parsed, or one listed twice.
    pub fn from_masters<I, S>(urls: I) -> Result<Self, LockError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut masters: Vec<String> = Vec::new();
        for url in urls {
            let url = url.as_ref();
            if !(url.starts_with("redis://") || url.starts_with("rediss://")) {
                return Err(LockError::invalid_url(
                    url,
                    "each Redlock master is a redis:// (or rediss://) URL",
                ));
            }
            crate::tls::client(url, None)
                .map_err(|e| LockError::invalid_url(url, redact_urls_in(&e.to_string())))?;
            if masters.iter().any(|m| m == url) {
                return Err(LockError::invalid_url(
                    url,
                    "this master is listed twice; Redlock needs independent masters",
                ));
            }
            masters.push(url.to_string());
        }
        if masters.is_empty() {
            return Err(LockError::Config(
                "Redlock needs at least one master (use 3 or 5 independent ones)".into(),
            ));
        }
        let shown = masters.iter().map(|m| redact_url(m)).collect();
        Ok(Self::new(masters, shown))
    }

    /// Sets the key prefix (default `lockkit`).
    ///
    /// # Errors
    ///
    /// [`LockError::Config`] for an empty prefix or one with braces.
    pub fn prefix(mut self, prefix: &str) -> Result<Self, LockError> {
        self.prefix = PrefixRule::NoBraces
            .check(prefix)
            .map_err(|why| LockError::Config(format!("the Redlock {why}")))?;
        Ok(self)
    }

    /// Names each lock's own key as `layout` says (`?keys=`; default
    /// [`KeyLayout::Tagged`]).
    pub fn with_keys(mut self, layout: KeyLayout) -> Self {
        self.keys = layout;
        self
    }

    /// Sets the fixed part of the clock-drift allowance (default 2 ms); the allowance
    /// is 1 % of the TTL plus this, and is taken off every lease's validity.
    pub fn clock_drift(mut self, drift: Duration) -> Self {
        self.drift = drift;
        self
    }

    /// Sets the mean delay before a failed attempt is retried (default 100 ms); each
    /// retry waits a random time between half and one and a half times this.
    pub fn retry_delay(mut self, retry: Duration) -> Self {
        self.retry = retry.max(Duration::from_millis(1));
        self
    }

    /// How waiters learn of a release (default [`WakeMode::Notify`]): with `Notify`,
    /// a waiter joins the lock's waiters queue on every master and each master's
    /// release wakes the earliest live one (the same on every master: see
    /// [`RedlockDriver`](super::RedlockDriver)'s "Wake-ups") through this driver's
    /// wake channel there
    /// (one pub/sub connection per master, subscribed in the background); while a
    /// quorum of masters can wake it, a waiter retries on its own only about once a
    /// second. With `Poll`, or until then, waiters retry after the random
    /// [`retry_delay`](Self::retry_delay).
    pub fn wake(mut self, wake: WakeMode) -> Self {
        self.wake = wake;
        self
    }

    /// What is done with a master whose `maxmemory-policy` is not `noeviction`, or
    /// cannot be read (`?eviction=`; default [`Eviction::Refuse`]).
    ///
    /// With `Refuse`, each master's policy is read before its first request, again
    /// after an error after which its connection may reconnect, and at least every
    /// 10 s. At [`connect`](super::RedlockDriver::connect), a master that answers
    /// with such a policy fails the connect with
    /// [`LockError::Config`](lockkit_core::LockError::Config), even if a quorum
    /// runs `noeviction`: it is a setting to fix, not an outage. Later (a master
    /// that was down at connect, or reconnects with another policy), each request
    /// to that master fails with the refusal, and it counts as a failed master for
    /// the quorum: its votes and its fencing counter are not used, as those of a
    /// master that is down. [`Eviction::Accept`] is unsafe: see there.
    pub fn eviction(mut self, eviction: Eviction) -> Self {
        self.eviction = eviction;
        self
    }

    /// Caps one request to one master (default 250 ms); the timeout actually used is
    /// a tenth of the TTL, at least 50 ms, at most this.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The number of masters.
    pub fn masters(&self) -> usize {
        self.masters.len()
    }

    /// How many masters must agree: `N/2 + 1`.
    pub fn quorum(&self) -> usize {
        self.masters.len() / 2 + 1
    }

    /// The key prefix.
    pub fn key_prefix(&self) -> &str {
        &self.prefix
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_options_need_redlocks_and_apply_to_every_master() {
        let e = RedlockOptions::from_url("redlock://:hunter2@h1:1,h2:2,h3:3?tls_ca=/ca.pem")
            .unwrap_err();
        assert!(matches!(e, LockError::InvalidUrl { .. }), "{e:?}");
        assert!(e.to_string().contains("use redlocks://"), "{e}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
        let o = RedlockOptions::from_url("REDLOCKS://:hunter2@h1:1,h2:2,h3:3").unwrap();
        assert!(
            o.masters.iter().all(|m| m.starts_with("rediss://")),
            "{o:?}"
        );
        assert!(!format!("{o:?}").contains("hunter2"));
        let e = RedlockOptions::from_url("redlocks://h1:1,h2:2,h3:3?tls_ca=/no/such/ca.pem")
            .unwrap_err();
        assert!(e.to_string().contains("tls_ca=/no/such/ca.pem"), "{e}");
        assert_eq!(
            RedlockOptions::from_masters(["rediss://h1:1", "redis://h2:2", "redis://h3:3"])
                .unwrap()
                .masters(),
            3
        );
    }
}
