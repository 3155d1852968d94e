//! [`EtcdOptions`]: which endpoints, which credentials, under which key prefix.

use std::fmt;

use lockkit_core::{LockError, redact_url};

/// Settings for [`super::EtcdDriver`], parsed from a URL. `Debug` never shows the
/// password.
///
/// # Examples
///
/// ```
/// use lockkit_etcd::EtcdOptions;
///
/// let o = EtcdOptions::from_url("etcd://app:s3cret@10.0.0.1:2379,10.0.0.2:2379?prefix=locks")?;
/// assert_eq!(o.endpoints(), ["http://10.0.0.1:2379", "http://10.0.0.2:2379"]);
/// assert_eq!(o.prefix(), "locks");
/// assert!(!format!("{o:?}").contains("s3cret"));
/// # Ok::<(), lockkit_core::LockError>(())
/// ```
#[derive(Clone)]
pub struct EtcdOptions {
    pub(crate) endpoints: Vec<String>,
    pub(crate) user: Option<(String, String)>,
    pub(crate) prefix: String,
    shown: String,
}

impl fmt::Debug for EtcdOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdOptions")
            .field("url", &self.shown)
            .field("endpoints", &self.endpoints)
            .field("user", &self.user.as_ref().map(|(u, _)| u.as_str()))
            .field("prefix", &self.prefix)
            .finish()
    }
}

impl fmt::Display for EtcdOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl EtcdOptions {
    /// Parses `etcd://[user:password@]host:port[,host:port…][?prefix=NAME]`.
    ///
    /// User and password may be percent-encoded. `prefix` is the key prefix every
    /// lock lives under (default `lockkit`; no control characters, trailing `/`
    /// dropped). `etcds://` (TLS) is recognised but not supported by this build.
    ///
    /// # Errors
    ///
    /// [`LockError::InvalidUrl`] naming what is wrong (with the password redacted);
    /// [`LockError::Unsupported`] for `etcds://`.
    pub fn from_url(url: &str) -> Result<Self, LockError> {
        let bad = |why: &str| LockError::InvalidUrl {
            url: shown(url),
            reason: why.to_string(),
        };
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| bad("an etcd URL looks like etcd://host:port[,host:port…]"))?;
        match scheme {
            "etcd" => {}
            "etcds" => {
                return Err(LockError::Unsupported {
                    driver: super::NAME,
                    capability: "TLS (etcds://): this build has no TLS; use etcd:// over a trusted network or a TLS-terminating proxy",
                });
            }
            _ => return Err(bad("the scheme must be etcd")),
        }
        let (base, query) = rest.split_once('?').unwrap_or((rest, ""));
        let base = base.strip_suffix('/').unwrap_or(base);
        if base.contains('/') {
            return Err(bad(
                "an etcd URL has no path; use ?prefix=NAME for a key prefix",
            ));
        }
        let mut prefix = "lockkit".to_string();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("prefix", v)) => {
                    let v = percent_decode(v)
                        .ok_or_else(|| bad("prefix is not valid percent-encoded UTF-8"))?;
                    let v = v.trim_end_matches('/');
                    if v.is_empty() || v.chars().any(char::is_control) {
                        return Err(bad(
                            "prefix must be non-empty and contain no control characters",
                        ));
                    }
                    prefix = v.to_string();
                }
                _ => return Err(bad("unknown option; the only option is prefix=NAME")),
            }
        }
        let (userinfo, hosts) = match base.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, base),
        };
        let user = match userinfo {
            None => None,
            Some(u) => {
                let (name, password) = u
                    .split_once(':')
                    .ok_or_else(|| bad("credentials are written user:password@"))?;
                let name = percent_decode(name)
                    .ok_or_else(|| bad("the user name is not valid percent-encoded UTF-8"))?;
                let password = percent_decode(password)
                    .ok_or_else(|| bad("the password is not valid percent-encoded UTF-8"))?;
                if name.is_empty() {
                    return Err(bad("the user name is empty"));
                }
                Some((name, password))
            }
        };
        let endpoints = hosts
            .split(',')
            .map(|h| endpoint(h).map_err(|why| bad(&why)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            endpoints,
            user,
            prefix,
            shown: shown(url),
        })
    }

    /// The endpoints, as `http://host:port`.
    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    /// The key prefix (default `lockkit`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The user name, if the URL has credentials.
    pub fn user(&self) -> Option<&str> {
        self.user.as_ref().map(|(u, _)| u.as_str())
    }
}

/// `url` fit to show: the password redacted, and userinfo without a `:` (which
/// may well be a secret written in the wrong place) hidden entirely.
fn shown(url: &str) -> String {
    let redacted = redact_url(url);
    let Some((scheme, rest)) = redacted.split_once("://") else {
        // Without a scheme nothing can be told apart: hide any credentials.
        return match redacted.rsplit_once('@') {
            Some((_, host)) => format!("***@{host}"),
            None => redacted,
        };
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    match rest[..authority_end].rsplit_once('@') {
        Some((userinfo, _)) if !userinfo.contains(':') => {
            format!("{scheme}://***@{}", &rest[userinfo.len() + 1..])
        }
        _ => redacted,
    }
}

/// `host:port` → `http://host:port`, or why not.
fn endpoint(h: &str) -> Result<String, String> {
    if h.is_empty() {
        return Err("an empty host in the endpoint list".into());
    }
    let (host, port) = h.rsplit_once(':').ok_or_else(|| {
        format!("endpoint `{h}` has no port; write host:port (etcd listens on 2379)")
    })?;
    let host_ok = !host.is_empty()
        && (host.starts_with('[') && host.ends_with(']')
            || host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')));
    if !host_ok {
        return Err(format!("endpoint `{h}` has an invalid host"));
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(format!("http://{host}:{p}")),
        _ => Err(format!("endpoint `{h}` has an invalid port")),
    }
}

/// Decodes `%XX` escapes; `None` for a broken escape or invalid UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_credentials_and_prefix_are_parsed() {
        let o = EtcdOptions::from_url("etcd://u:p%40ss@h1:1,[::1]:2?prefix=app/locks/").unwrap();
        assert_eq!(o.endpoints(), ["http://h1:1", "http://[::1]:2"]);
        assert_eq!(o.user, Some(("u".into(), "p@ss".into())));
        assert_eq!(o.prefix(), "app/locks");
        let plain = EtcdOptions::from_url("etcd://127.0.0.1:2379").unwrap();
        assert_eq!(plain.prefix(), "lockkit");
        assert_eq!(plain.user(), None);
    }

    #[test]
    fn debug_and_display_never_show_the_password() {
        let o = EtcdOptions::from_url("etcd://root:hunter2@h:1").unwrap();
        for shown in [format!("{o:?}"), o.to_string()] {
            assert!(!shown.contains("hunter2"), "{shown}");
            assert!(shown.contains("root"), "{shown}");
        }
    }

    #[test]
    fn bad_urls_get_typed_errors_without_the_password() {
        for url in [
            "etcd://root:hunter2@",
            "etcd://root:hunter2@h1:1,,h2:2",
            "etcd://root:hunter2@h1",
            "etcd://root:hunter2@h1:99999",
            "etcd://root:hunter2@h1:0",
            "etcd://root:hunter2@h1:1/path",
            "etcd://root:hunter2@h1:1?prefix=",
            "etcd://root:hunter2@h1:1?colour=blue",
            "etcd://root:hunter2@h 1:1",
            "etcd://hunter2@h1:1",
            "etcd://:hunter2@h1:1",
            "etcd://root:hunter2%zz@h1:1",
            "redis://root:hunter2@h1:1",
            "root:hunter2@h1:1",
        ] {
            let e = EtcdOptions::from_url(url).unwrap_err();
            assert!(matches!(e, LockError::InvalidUrl { .. }), "{url}: {e:?}");
            assert!(!e.to_string().contains("hunter2"), "{e}");
            assert!(!format!("{e:?}").contains("hunter2"), "{e:?}");
        }
    }

    #[test]
    fn tls_scheme_is_a_typed_unsupported_error() {
        let e = EtcdOptions::from_url("etcds://root:hunter2@h1:1").unwrap_err();
        assert!(matches!(e, LockError::Unsupported { .. }), "{e:?}");
        assert!(!e.to_string().contains("hunter2"));
    }
}
