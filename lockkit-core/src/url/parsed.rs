//! [`ParsedUrl`]: a connection URL taken apart once, for every driver.

use super::query::{Query, one_of};
use super::redact_url;
use crate::error::LockError;

/// Why a URL whose userinfo seems to hold `?` or `#` is refused: it cannot be
/// told from an option value that holds `@`.
const UNENCODED: &str = "the user name or password holds a character that ends it in a URL \
     (`?`, `#`, `/`, `@`, `:`, `%`), or an option value holds `@`: percent-encode them \
     (`?` as %3F, `#` as %23, `/` as %2F, `@` as %40, `:` as %3A, `%` as %25)";

/// A connection URL taken apart: the scheme (lowercased: `Redis://` is `redis://`),
/// the part before the `?`, and the [`Query`] options.
///
/// Every driver parses its URL through this, so the same rules hold everywhere:
/// schemes are case-insensitive, unknown options are errors that name them, option
/// values are percent-decoded, a fragment (`#…`) is refused, and no error shows a
/// password or token.
///
/// # Examples
///
/// ```
/// use lockkit_core::url::ParsedUrl;
///
/// let mut url = ParsedUrl::parse("Redis://app:s3cret@10.0.0.1:6379/2?prefix=locks", &["redis", "rediss"],
///     "redis://host:port")?;
/// assert_eq!(url.scheme(), "redis");
/// let server = url.server()?;
/// assert_eq!(server.userinfo, Some("app:s3cret"));
/// assert_eq!(server.hosts, "10.0.0.1:6379");
/// assert_eq!(server.path, "/2");
/// assert_eq!(url.query.take("prefix")?.as_deref(), Some("locks"));
/// url.query.finish()?;
///
/// let err = ParsedUrl::parse("postgres://u:s3cret@h/db", &["redis"], "redis://host:port").unwrap_err();
/// assert!(err.to_string().contains("redis://host:port"));
/// assert!(!err.to_string().contains("s3cret"));
/// # Ok::<(), lockkit::LockError>(())
/// ```
#[derive(Debug)]
pub struct ParsedUrl<'a> {
    url: &'a str,
    scheme: String,
    body: &'a str,
    /// The options after `?`.
    pub query: Query,
}

/// The `//[userinfo@]hosts[/path]` part of a URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Server<'a> {
    /// What comes before the last `@` of the authority, as written (percent-encoded).
    pub userinfo: Option<&'a str>,
    /// The host list: `host:port`, or several separated by `,`.
    pub hosts: &'a str,
    /// From the first `/` after the hosts (empty if there is none).
    pub path: &'a str,
}

impl<'a> Server<'a> {
    /// The hosts, split at `,`.
    pub fn host_list(&self) -> impl Iterator<Item = &'a str> {
        self.hosts.split(',')
    }
}

impl<'a> ParsedUrl<'a> {
    /// Splits `url`, whose scheme must be one of `schemes` (compared
    /// case-insensitively). `example` shows what a URL of this driver looks like.
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidUrl`] for another or a missing scheme, or a fragment.
    pub fn parse(url: &'a str, schemes: &[&str], example: &str) -> Result<Self, LockError> {
        let bad = |why: String| LockError::invalid_url(url, why);
        let scheme = crate::url_scheme(url)
            .map(str::to_ascii_lowercase)
            .filter(|s| schemes.contains(&s.as_str()))
            .ok_or_else(|| {
                bad(format!(
                    "the scheme must be {}; e.g. {example}",
                    one_of(schemes)
                ))
            })?;
        let after = &url[scheme.len() + 1..];
        if let Some((userinfo, _)) = after.strip_prefix("//").and_then(|r| r.rsplit_once('@'))
            && userinfo.contains(['?', '#'])
        {
            return Err(bad(UNENCODED.into()));
        }
        if after.contains('#') {
            return Err(bad(
                "a URL fragment (#…) is not supported; write options as ?name=value".into(),
            ));
        }
        let (body, query) = after.split_once('?').unwrap_or((after, ""));
        Ok(Self {
            url,
            scheme,
            body,
            query: Query::parse(url, query),
        })
    }

    /// The scheme, lowercased.
    pub fn scheme(&self) -> &str {
        &self.scheme
    }

    /// Everything between `scheme:` and `?`, as written (`//host:port/path`,
    /// `:memory:`).
    pub fn body(&self) -> &'a str {
        self.body
    }

    /// The URL as given.
    pub fn as_str(&self) -> &'a str {
        self.url
    }

    /// The URL fit to show: any password or token replaced by `***`.
    pub fn shown(&self) -> String {
        redact_url(self.url)
    }

    /// An [`LockError::InvalidUrl`] for this URL.
    pub fn invalid(&self, reason: impl Into<String>) -> LockError {
        self.query.invalid(reason)
    }

    /// The URL's server part, `//[userinfo@]hosts[/path]`.
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidUrl`] if the body does not start with `//`.
    pub fn server(&self) -> Result<Server<'a>, LockError> {
        let Some(rest) = self.body.strip_prefix("//") else {
            return Err(self.invalid(format!("write {}://host:port (with //)", self.scheme)));
        };
        // The userinfo ends at the last `@` before the path: a password may hold
        // an unescaped `@` or `/`.
        let (userinfo, after) = match rest.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, rest),
        };
        let (hosts, path) = match after.find('/') {
            Some(i) => after.split_at(i),
            None => (after, ""),
        };
        Ok(Server {
            userinfo,
            hosts,
            path,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_are_case_insensitive() {
        let u = ParsedUrl::parse("SQLITE://x.db", &["sqlite"], "sqlite://path").unwrap();
        assert_eq!(u.scheme(), "sqlite");
        assert_eq!(u.body(), "//x.db");
    }

    #[test]
    fn servers_split_at_the_last_at_sign_before_the_path() {
        let u = ParsedUrl::parse("zk://u:p@ss@h1:1,h2:2/chroot/x", &["zk"], "zk://h:p").unwrap();
        let s = u.server().unwrap();
        assert_eq!(s.userinfo, Some("u:p@ss"));
        assert_eq!(s.host_list().collect::<Vec<_>>(), ["h1:1", "h2:2"]);
        assert_eq!(s.path, "/chroot/x");
    }

    #[test]
    fn a_userinfo_holding_a_query_or_fragment_mark_is_refused_with_the_fix() {
        for url in [
            "redis://app:hunter2?x@127.0.0.1:1",
            "redis://app:p@ss:w/rd#?%&@h:1",
        ] {
            let e = ParsedUrl::parse(url, &["redis"], "redis://h:p")
                .unwrap_err()
                .to_string();
            assert!(e.contains("percent-encode"), "{e}");
            assert!(!e.contains("hunter2") && !e.contains("rd#"), "{e}");
        }
    }

    #[test]
    fn fragments_and_other_schemes_are_refused() {
        assert!(ParsedUrl::parse("redis://h:1#insecure", &["redis"], "r").is_err());
        let e = ParsedUrl::parse("etcd://h:1", &["redis", "rediss"], "redis://h:p").unwrap_err();
        assert!(e.to_string().contains("redis or rediss"), "{e}");
        assert!(ParsedUrl::parse("no scheme", &["redis"], "r").is_err());
    }
}
