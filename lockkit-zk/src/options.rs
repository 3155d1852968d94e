//! [`ZkOptions`]: which servers, which credentials, which chroot, which session timeout.

use std::fmt;
use std::time::Duration;

use lockkit_core::LockError;
use lockkit_core::tls::{Scheme, TlsFiles, TlsPaths};
use lockkit_core::url::{ParsedUrl, Timeouts, credentials, host_port};

use crate::recipe::Recipe;

/// The URL schemes the ZooKeeper driver takes.
pub(crate) const SCHEMES: &[&str] = &["zk", "zookeeper", "zks"];

/// The session timeout asked for when the URL gives none (the server clamps it to
/// its `minSessionTimeout`..`maxSessionTimeout`, by default 2..20 ticks).
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// How long connecting (a session), and each request, may take by default.
pub(crate) const DEFAULT_TIMEOUTS: Timeouts =
    Timeouts::new(Duration::from_secs(5), Duration::from_secs(5));

/// Settings for [`crate::ZkDriver`], parsed from a URL. `Debug` and `Display` never
/// show the password.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use lockkit::zk::ZkOptions;
///
/// let o = ZkOptions::from_url("zk://app:s3cret@10.0.0.1:2181,10.0.0.2:2181/prod?session_timeout_ms=4000")?;
/// assert_eq!(o.hosts(), "10.0.0.1:2181,10.0.0.2:2181");
/// assert_eq!(o.root(), "/prod/lockkit");
/// assert_eq!(o.session_timeout(), Duration::from_secs(4));
/// assert_eq!(o.user(), Some("app"));
/// assert!(!format!("{o:?} {o}").contains("s3cret"));
/// # Ok::<(), lockkit::LockError>(())
/// ```
#[derive(Clone)]
pub struct ZkOptions {
    pub(crate) hosts: String,
    pub(crate) root: String,
    /// `user:password` for the `digest` scheme.
    /// The chroot (`""` for none): a foreign recipe's lock paths live under it.
    pub(crate) chroot: String,
    /// Whose node names the queue follows (`?recipe=`).
    pub(crate) recipe: Recipe,
    pub(crate) digest: Option<(String, String)>,
    pub(crate) session_timeout: Duration,
    /// Opening a session, and each request.
    pub(crate) timeouts: Timeouts,
    /// `zks://`: the CA to verify the servers with, and a client certificate.
    pub(crate) tls: Option<TlsFiles>,
    shown: String,
}

/// `zk://127.0.0.1:2181` with lockkit's defaults: no chroot (locks under
/// `/lockkit`), lockkit's own recipe, a 10 s session timeout, open ACLs. For
/// [`ZkDriver::from_client`](crate::ZkDriver::from_client), which ignores the
/// address and sees paths under the client's own chroot.
impl Default for ZkOptions {
    fn default() -> Self {
        Self {
            hosts: "127.0.0.1:2181".to_owned(),
            root: "/lockkit".to_owned(),
            chroot: String::new(),
            recipe: Recipe::default(),
            digest: None,
            session_timeout: DEFAULT_SESSION_TIMEOUT,
            timeouts: DEFAULT_TIMEOUTS,
            tls: None,
            shown: "zk://127.0.0.1:2181".to_owned(),
        }
    }
}

impl fmt::Debug for ZkOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZkOptions")
            .field("url", &self.shown)
            .field("hosts", &self.hosts)
            .field("root", &self.root)
            .field("recipe", &self.recipe)
            .field("user", &self.user().map(lockkit_core::shown_user))
            .field("session_timeout", &self.session_timeout)
            .field("timeouts", &self.timeouts)
            .field("tls", &self.tls)
            .finish()
    }
}

impl fmt::Display for ZkOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl ZkOptions {
    /// Parses `zk://[user:password@]host:port[,host:port…][/chroot][?session_timeout_ms=N]`,
    /// or `zks://…?tls_ca=PATH` for TLS to every server.
    ///
    /// - `user:password@` (percent-encoded if need be) authenticates with ZooKeeper's
    ///   `digest` scheme, and every node lockkit creates then carries the ACL
    ///   `auth` (all permissions to that identity only): give every client of the
    ///   same locks the same credentials.
    /// - `/chroot` (any depth) is where lockkit's `lockkit` node lives; it is created
    ///   if missing. Without it, locks live under `/lockkit`.
    /// - `connect_timeout_ms` bounds opening a session (default 5000), and
    ///   `request_timeout_ms` each request (default 5000); a request that times out
    ///   has an unknown outcome, as one cut by a dropped connection.
    /// - `zks://` speaks TLS to every server (ZooKeeper's `secureClientPort`),
    ///   verifying it against `tls_ca=PATH`, which `zks://` requires (the ZooKeeper
    ///   client verifies only against a CA it is given); `tls_cert=PATH&tls_key=PATH`
    ///   present a client certificate, for a server with `ssl.clientAuth=need`.
    /// - `session_timeout_ms` is the session timeout to negotiate (default 10000).
    ///   It bounds how long a crashed holder's locks outlive it, and how soon a
    ///   holder cut off from the servers learns (2/5 of it, then `lost()` fires).
    /// - `recipe=lockkit|curator|curator-rw|kazoo` names the queue nodes as that
    ///   library names its lock's, with the key as the lock's path under the
    ///   chroot, so that lockkit and the library share locks (see [`Recipe`]).
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidUrl`] naming what is wrong, with the password redacted.
    pub fn from_url(url: &str) -> Result<Self, LockError> {
        let mut parsed = ParsedUrl::parse(
            url,
            SCHEMES,
            "zk://host:port[,host:port…][/chroot] (zks://…?tls_ca=PATH for TLS)",
        )?;
        let tls_scheme = parsed.scheme() == "zks";
        let shown = parsed.shown();
        let server = parsed.server()?;
        let chroot = server.path.trim_end_matches('/');
        if chroot
            .split('/')
            .skip(1)
            .any(|c| c.is_empty() || c == "." || c == "..")
            || chroot.chars().any(char::is_control)
        {
            return Err(parsed
                .invalid("the chroot must be an absolute path without empty, `.` or `..` parts"));
        }
        let query = &mut parsed.query;
        let session_timeout = query
            .take_millis("session_timeout_ms", 100..=3_600_000)?
            .unwrap_or(DEFAULT_SESSION_TIMEOUT);
        let timeouts = query.take_timeouts(DEFAULT_TIMEOUTS)?;
        let recipe = query
            .take_choice("recipe", &Recipe::NAMES)?
            .unwrap_or_default();
        let tls_paths = TlsPaths::from_query(query)?;
        parsed.query.finish()?;
        let bad = |why: &str| LockError::InvalidUrl {
            url: shown.clone(),
            reason: why.to_string(),
        };
        let scheme = Scheme {
            name: if tls_scheme { "zks" } else { "zk" },
            tls: tls_scheme,
            built: cfg!(feature = "tls"),
            instead: "zks:// instead of zk://",
        };
        let tls = tls_paths.for_scheme(&scheme, &bad)?;
        // zks:// needs a CA on top of the rule every driver follows: the ZooKeeper
        // client verifies only against a CA it is given.
        if tls.as_ref().is_some_and(|files| files.ca.is_none()) {
            return Err(bad(
                "zks:// needs the CA to verify the servers with: add tls_ca=PATH \
                 (the ZooKeeper client does not use the system's root certificates)",
            ));
        }
        let digest = match server.userinfo {
            None => None,
            Some(u) => {
                let (user, password) = credentials(u).map_err(bad)?;
                if user.contains(':') {
                    return Err(bad("the user name must contain no `:`"));
                }
                Some((user, password))
            }
        };
        for h in server.host_list() {
            host_port(h, "ZooKeeper listens on 2181").map_err(|why| bad(&why))?;
        }
        Ok(Self {
            hosts: server.hosts.to_string(),
            root: format!("{chroot}/lockkit"),
            chroot: chroot.to_owned(),
            recipe,
            digest,
            session_timeout,
            timeouts,
            tls,
            shown,
        })
    }

    /// The servers, `host:port,host:port…`.
    pub fn hosts(&self) -> &str {
        &self.hosts
    }

    /// Whose node names the queue follows (`?recipe=`; default
    /// [`Recipe::Lockkit`]).
    pub fn recipe(&self) -> Recipe {
        self.recipe
    }

    /// Names queue nodes as `recipe` says; with a foreign recipe, the key is the
    /// lock's path under the chroot.
    pub fn with_recipe(mut self, recipe: Recipe) -> Self {
        self.recipe = recipe;
        self
    }

    /// The node every lock of lockkit's recipe lives under: `<chroot>/lockkit`.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// The `digest` user, if the URL has credentials.
    pub fn user(&self) -> Option<&str> {
        self.digest.as_ref().map(|(u, _)| u.as_str())
    }

    /// Whether the URL is `zks://` (TLS to every server).
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The session timeout asked for.
    pub fn session_timeout(&self) -> Duration {
        self.session_timeout
    }

    /// Asks for another session timeout.
    pub fn with_session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_urls_get_reasons_without_the_password() {
        for (url, needle) in [
            ("redis://h:1", "the scheme must be zk, zookeeper or zks"),
            ("zk://h", "no port"),
            ("zk://h:0", "invalid port"),
            ("zk://h:1,,h:2", "empty host"),
            ("zk://h:1/a//b", "chroot"),
            ("zk://h:1/a/../b", "chroot"),
            ("zk://h:1?session_timeout_ms=5", "session_timeout_ms"),
            ("zk://h:1?x=1", "unknown option `x`"),
            (
                "zk://h:1?session_timeut_ms=1",
                "did you mean `session_timeout_ms`",
            ),
            ("zk://u:pw%zz@h:1", "percent"),
            ("zk://s3cret@h:1", "user:password"),
        ] {
            let e = ZkOptions::from_url(url).unwrap_err().to_string();
            assert!(e.contains(needle), "{url}: {e}");
            assert!(!e.contains("s3cret") && !e.contains("pw%zz"), "{url}: {e}");
        }
    }

    #[test]
    fn defaults() {
        let o = ZkOptions::from_url("zk://127.0.0.1:2181").unwrap();
        assert_eq!(o.root(), "/lockkit");
        assert_eq!(o.session_timeout(), DEFAULT_SESSION_TIMEOUT);
        assert_eq!(o.user(), None);
        let o = ZkOptions::from_url("zk://127.0.0.1:2181/").unwrap();
        assert_eq!(o.root(), "/lockkit");
    }
}
