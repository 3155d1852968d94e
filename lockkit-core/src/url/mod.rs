//! URL parsing, written once for every driver.
//!
//! [`ParsedUrl`] takes a connection URL apart (scheme, server part, options), and
//! [`Query`] hands out its options one by one and reports any left over by name, with
//! a "did you mean" ([`did_you_mean`]). [`Timeouts`] are the two time limits every
//! networked driver takes from its URL. The helpers below read the pieces:
//! percent-decoding, `user:password@` and `host:port` lists.
//!
//! # Examples
//!
//! A driver's URL, read with these pieces:
//!
//! ```
//! use std::time::Duration;
//! use lockkit_core::url::{ParsedUrl, Timeouts, credentials, host_port};
//!
//! let url = "Acme://app:p%40ss@h1:7000,h2:7000/ns?connect_timeout_ms=500";
//! let mut parsed = ParsedUrl::parse(url, &["acme"], "acme://host:port")?;
//! let server = parsed.server()?;
//! let (user, password) =
//!     credentials(server.userinfo.unwrap_or_default()).map_err(|why| parsed.invalid(why))?;
//! assert_eq!((user.as_str(), password.as_str()), ("app", "p@ss"));
//! for host in server.host_list() {
//!     assert_eq!(host_port(host, "acme listens on 7000"), Ok(7000));
//! }
//! assert_eq!(server.path, "/ns");
//! let defaults = Timeouts::new(Duration::from_secs(5), Duration::from_secs(2));
//! let timeouts = parsed.query.take_timeouts(defaults)?;
//! assert_eq!(timeouts, Timeouts::new(Duration::from_millis(500), Duration::from_secs(2)));
//! parsed.query.finish()?;
//! # Ok::<(), lockkit::LockError>(())
//! ```

mod connecting;
mod parsed;
mod prefix;
mod query;
mod redact;
mod suggest;

pub use parsed::{ParsedUrl, Server};
pub use prefix::PrefixRule;
pub use query::{Query, Timeouts};
pub use redact::{redact_url, redact_urls_in, shown_user};
pub use suggest::did_you_mean;

/// Decodes `%XX` escapes (as in URL userinfo and option values); `None` for a
/// broken escape or a result that is not UTF-8.
///
/// # Examples
///
/// ```
/// assert_eq!(lockkit_core::url::percent_decode("p%40ss%3Aw").as_deref(), Some("p@ss:w"));
/// assert_eq!(lockkit_core::url::percent_decode("100%"), None);
/// ```
pub fn percent_decode(s: &str) -> Option<String> {
    crate::types::decode_escaped(s, b'%')
}

/// Splits an authority (`[userinfo@]hosts`) at its last `@`.
pub fn split_userinfo(authority: &str) -> (Option<&str>, &str) {
    match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    }
}

/// `user:password` (each percent-encoded if need be) → the decoded pair, or why
/// not (the message never contains either part).
///
/// # Examples
///
/// ```
/// use lockkit_core::url::credentials;
///
/// assert_eq!(credentials("app:p%40ss"), Ok(("app".into(), "p@ss".into())));
/// assert!(credentials("s3cret").is_err());
/// ```
pub fn credentials(userinfo: &str) -> Result<(String, String), &'static str> {
    let (user, password) = userinfo
        .split_once(':')
        .ok_or("credentials are written user:password@")?;
    let user = percent_decode(user)
        .ok_or("the user name is not valid percent-encoded UTF-8: write a `%` in it as %25")?;
    let password = percent_decode(password).ok_or(
        "the password is not valid percent-encoded UTF-8: percent-encode it (a `%` as %25, \
         `?` as %3F, `#` as %23, `/` as %2F, `@` as %40, `:` as %3A)",
    )?;
    if user.is_empty() {
        return Err("the user name is empty");
    }
    Ok((user, password))
}

/// A userinfo as a client library's URL parser reads it: each part decoded and
/// percent-encoded again, so that a password written with an unescaped `/`,
/// `@` or `:` (which lockkit reads up to the last `@`) reaches the library
/// whole, and the library's own parser never splits it elsewhere.
///
/// # Examples
///
/// ```
/// use lockkit_core::url::reencoded_userinfo;
///
/// assert_eq!(reencoded_userinfo("app:p@ss/w:rd").as_deref(), Ok("app:p%40ss%2Fw%3Ard"));
/// assert_eq!(reencoded_userinfo("app:p%40ss").as_deref(), Ok("app:p%40ss"));
/// assert_eq!(reencoded_userinfo("token").as_deref(), Ok("token"));
/// ```
///
/// # Errors
///
/// Why not, as [`credentials`] says it, for a part that is not valid
/// percent-encoded UTF-8.
pub fn reencoded_userinfo(userinfo: &str) -> Result<String, &'static str> {
    let (user, password) = match userinfo.split_once(':') {
        Some((user, password)) => (user, Some(password)),
        None => (userinfo, None),
    };
    let decoded = |part: &str, why: &'static str| percent_decode(part).ok_or(why);
    let mut out = percent_encode(&decoded(
        user,
        "the user name is not valid percent-encoded UTF-8: write a `%` in it as %25",
    )?);
    if let Some(password) = password {
        out.push(':');
        out.push_str(&percent_encode(&decoded(
            password,
            "the password is not valid percent-encoded UTF-8: percent-encode it (a `%` as \
             %25, `?` as %3F, `#` as %23, `/` as %2F, `@` as %40, `:` as %3A)",
        )?));
    }
    Ok(out)
}

/// Every byte of `s` but the unreserved (`A–Z a–z 0–9 - . _ ~`) as `%XX`.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Checks one `host:port` of a server list (a name, an IPv4 address or a
/// bracketed IPv6 address, and a port from 1 to 65535) and returns the port;
/// `what` names the server kind in the message (`"etcd listens on 2379"`).
///
/// # Examples
///
/// ```
/// use lockkit_core::url::host_port;
///
/// assert_eq!(host_port("10.0.0.1:2181", "ZooKeeper listens on 2181"), Ok(2181));
/// assert!(host_port("10.0.0.1", "ZooKeeper listens on 2181").unwrap_err().contains("2181"));
/// ```
pub fn host_port(h: &str, what: &str) -> Result<u16, String> {
    if h.is_empty() {
        return Err("an empty host in the server list".into());
    }
    let (host, port) = h
        .rsplit_once(':')
        .ok_or_else(|| format!("server `{h}` has no port; write host:port ({what})"))?;
    let host_ok = !host.is_empty()
        && (host.starts_with('[') && host.ends_with(']')
            || host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')));
    if !host_ok {
        return Err(format!("server `{h}` has an invalid host"));
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(format!("server `{h}` has an invalid port")),
    }
}
