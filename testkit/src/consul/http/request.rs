//! Requests as Consul's agent reads them: the path and query decoded the way Go's
//! `net/url` does, the ACL token, and Go's escaping and path cleaning.

use bytes::Bytes;
use hyper::Method;
use hyper::header::HeaderMap;

/// A request, its path and query decoded the way Go's `net/url` does.
#[derive(Debug)]
pub(crate) struct Req {
    pub(crate) method: Method,
    pub(crate) path: String,
    pub(crate) query: Vec<(String, String)>,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Req {
    pub(crate) fn new(
        method: Method,
        uri: &hyper::Uri,
        headers: HeaderMap,
        body: Bytes,
    ) -> Option<Self> {
        let path = String::from_utf8(percent_decode(uri.path(), false)?).ok()?;
        let query = uri
            .query()
            .unwrap_or_default()
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                let decode = |s: &str| {
                    percent_decode(s, true)
                        .map_or_else(|| s.to_owned(), |b| String::from_utf8_lossy(&b).into())
                };
                (decode(k), decode(v))
            })
            .collect();
        Some(Self {
            method,
            path,
            query,
            headers,
            body,
        })
    }

    /// Is the query parameter there (with or without a value)?
    pub(crate) fn has(&self, name: &str) -> bool {
        self.query.iter().any(|(k, _)| k == name)
    }

    /// The first value of a query parameter (`""` when given without one).
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The ACL token: `?token=`, then `X-Consul-Token`, then `Authorization:
    /// Bearer`, as Consul looks for it.
    pub(crate) fn token(&self) -> Option<&str> {
        let header = |name: &str| {
            self.headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .filter(|v| !v.is_empty())
        };
        self.get("token")
            .filter(|t| !t.is_empty())
            .or_else(|| header("X-Consul-Token"))
            .or_else(|| {
                header("Authorization")?
                    .strip_prefix("Bearer ")
                    .map(str::trim)
                    .and_then(|v| v.split(' ').next())
                    .filter(|v| !v.is_empty())
            })
    }
}

/// `%XX` decoding (and `+` as space in a query); `None` for a bad escape.
pub(crate) fn percent_decode(s: &str, plus_is_space: bool) -> Option<Vec<u8>> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Some(out)
}

/// Escapes a path for a `Location` header (Go's `url.PathEscape` rules, `/` kept).
pub(crate) fn path_escape(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Go's `url.QueryEscape`.
pub(crate) fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b' ' => out.push('+'),
            b if b.is_ascii_alphanumeric() || b"-._~".contains(&b) => out.push(b as char),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// What Go's `ServeMux` redirects a non-canonical path to (`//`, `.`, `..`).
pub(crate) fn clean_path(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    let mut clean = format!("/{}", parts.join("/"));
    if path.ends_with('/') && clean != "/" {
        clean.push('/');
    }
    (clean != path).then_some(clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_cleaned_like_servemux() {
        assert_eq!(clean_path("/v1/kv/a//b"), Some("/v1/kv/a/b".into()));
        assert_eq!(clean_path("/v1/kv/a/../b"), Some("/v1/kv/b".into()));
        assert_eq!(clean_path("/v1/kv/a/"), None);
        assert_eq!(clean_path("/v1/kv/a"), None);
    }

    #[test]
    fn query_values_decode() {
        assert_eq!(percent_decode("a%2Fb+c", true), Some(b"a/b c".to_vec()));
        assert_eq!(percent_decode("a%2", false), None);
    }
}
