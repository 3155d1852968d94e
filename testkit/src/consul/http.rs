//! HTTP as Consul's agent speaks it (`agent/http.go`): requests with Go's path
//! and query decoding, replies with Consul's headers and plain-text errors, and
//! the routing of Go's `ServeMux` (exact paths, `/`-ended prefixes, 301 to a clean
//! path, 404 with an empty body, 405 with `Allow`).
//!
//! Status codes are Consul's: what its RPC layer reports (an invalid session, a TTL
//! out of range, an unparsable `cas`) is a 500 with the error text, as the agent's
//! `handleErr` sends it; only what the HTTP layer itself checks is a 400.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::HeaderMap;
use hyper::{Method, Response, StatusCode};
use serde::Serialize;

use super::kv::{kv_delete, kv_get, kv_put};
use super::query::{QueryOpts, need, resolve};
use super::server::Shared;
use super::session::{
    session_create, session_destroy, session_info, session_list, session_node, session_renew,
};
use super::state::NODE;
use super::txn;

/// The one datacenter.
pub(super) const DATACENTER: &str = "dc1";

// ---------------------------------------------------------------------------
// Requests and replies

/// A request, its path and query decoded the way Go's `net/url` does.
#[derive(Debug)]
pub(super) struct Req {
    pub(super) method: Method,
    pub(super) path: String,
    pub(super) query: Vec<(String, String)>,
    pub(super) headers: HeaderMap,
    pub(super) body: Bytes,
}

impl Req {
    pub(super) fn new(
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
    pub(super) fn has(&self, name: &str) -> bool {
        self.query.iter().any(|(k, _)| k == name)
    }

    /// The first value of a query parameter (`""` when given without one).
    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The ACL token: `?token=`, then `X-Consul-Token`, then `Authorization:
    /// Bearer`, as Consul looks for it.
    pub(super) fn token(&self) -> Option<&str> {
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
pub(super) fn percent_decode(s: &str, plus_is_space: bool) -> Option<Vec<u8>> {
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
pub(super) fn path_escape(path: &str) -> String {
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
pub(super) fn query_escape(s: &str) -> String {
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
pub(super) fn clean_path(path: &str) -> Option<String> {
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

/// A reply under construction.
#[derive(Debug)]
pub(super) struct Reply {
    pub(super) status: StatusCode,
    pub(super) headers: Vec<(&'static str, String)>,
    pub(super) content_type: Option<&'static str>,
    pub(super) body: Bytes,
}

/// A handler's outcome: the early exits are replies too.
pub(super) type Handled = Result<Reply, Reply>;

pub(super) fn text(status: StatusCode, body: impl Into<String>) -> Reply {
    Reply {
        status,
        headers: Vec::new(),
        content_type: Some("text/plain; charset=utf-8"),
        body: Bytes::from(body.into()),
    }
}

pub(super) fn empty(status: StatusCode) -> Reply {
    Reply {
        status,
        headers: Vec::new(),
        content_type: None,
        body: Bytes::new(),
    }
}

pub(super) fn json(value: &impl Serialize) -> Reply {
    match serde_json::to_vec(value) {
        Ok(body) => Reply {
            status: StatusCode::OK,
            headers: Vec::new(),
            content_type: Some("application/json"),
            body: Bytes::from(body),
        },
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

pub(super) fn bad_request(msg: impl Into<String>) -> Reply {
    text(StatusCode::BAD_REQUEST, msg)
}

pub(super) fn server_error(msg: impl Into<String>) -> Reply {
    text(StatusCode::INTERNAL_SERVER_ERROR, msg)
}

impl Reply {
    pub(super) fn status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    pub(super) fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// The headers of a read (`setMeta`): index (never 0), leader, consistency.
    pub(super) fn meta(self, index: u64, q: &QueryOpts, acl: bool) -> Self {
        self.header("X-Consul-Index", index.max(1).to_string())
            .header("X-Consul-KnownLeader", "true")
            .header("X-Consul-LastContact", "0")
            .header("X-Consul-Effective-Consistency", q.consistency)
            .header(
                "X-Consul-Default-ACL-Policy",
                if acl { "deny" } else { "allow" },
            )
    }

    pub(super) fn into_response(self) -> Response<Full<Bytes>> {
        let mut response = Response::new(Full::new(self.body));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        if let Some(ct) = self.content_type
            && let Ok(v) = ct.parse()
        {
            headers.insert(hyper::header::CONTENT_TYPE, v);
        }
        for (name, value) in self.headers {
            if let Ok(v) = value.parse() {
                headers.append(name, v);
            }
        }
        response
    }
}

// ---------------------------------------------------------------------------
// Routing

/// The endpoints, Go `ServeMux` style: exact paths, and prefixes ending in `/`.
#[derive(Debug, Clone, Copy)]
pub(super) enum Endpoint {
    Kv,
    SessionCreate,
    SessionDestroy,
    SessionRenew,
    SessionInfo,
    SessionNode,
    SessionList,
    Txn,
    StatusLeader,
    StatusPeers,
    AgentSelf,
}

pub(super) const ROUTES: &[(&str, Endpoint, &[&str])] = &[
    ("/v1/kv/", Endpoint::Kv, &["GET", "PUT", "DELETE"]),
    ("/v1/session/create", Endpoint::SessionCreate, &["PUT"]),
    ("/v1/session/destroy/", Endpoint::SessionDestroy, &["PUT"]),
    ("/v1/session/renew/", Endpoint::SessionRenew, &["PUT"]),
    ("/v1/session/info/", Endpoint::SessionInfo, &["GET"]),
    ("/v1/session/node/", Endpoint::SessionNode, &["GET"]),
    ("/v1/session/list", Endpoint::SessionList, &["GET"]),
    ("/v1/txn", Endpoint::Txn, &["PUT"]),
    ("/v1/status/leader", Endpoint::StatusLeader, &["GET"]),
    ("/v1/status/peers", Endpoint::StatusPeers, &["GET"]),
    ("/v1/agent/self", Endpoint::AgentSelf, &["GET"]),
];

pub(super) async fn route(shared: &Shared, req: &Req) -> Reply {
    let path = req.path.as_str();
    let query_suffix = || {
        let q = req
            .query
            .iter()
            .map(|(k, v)| format!("{}={}", query_escape(k), query_escape(v)))
            .collect::<Vec<_>>()
            .join("&");
        if q.is_empty() { q } else { format!("?{q}") }
    };
    if let Some(clean) = clean_path(path) {
        return empty(StatusCode::MOVED_PERMANENTLY).header(
            "Location",
            format!("{}{}", path_escape(&clean), query_suffix()),
        );
    }
    let found = ROUTES.iter().find(|(pattern, _, _)| {
        if pattern.ends_with('/') {
            path.starts_with(pattern)
        } else {
            path == *pattern
        }
    });
    let Some(&(pattern, endpoint, methods)) = found else {
        // `ServeMux` sends `/v1/kv` on to the subtree `/v1/kv/`.
        let subtree = format!("{path}/");
        if ROUTES.iter().any(|(p, _, _)| *p == subtree) {
            return empty(StatusCode::MOVED_PERMANENTLY).header(
                "Location",
                format!("{}{}", path_escape(&subtree), query_suffix()),
            );
        }
        if path == "/" {
            return text(StatusCode::OK, "Consul Agent");
        }
        return empty(StatusCode::NOT_FOUND);
    };
    let allow = format!("OPTIONS,{}", methods.join(","));
    if req.method == Method::OPTIONS {
        return empty(StatusCode::OK).header("Allow", allow);
    }
    if !methods.contains(&req.method.as_str()) {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("method {} not allowed", req.method),
        )
        .header("Allow", allow);
    }
    if let Ok(mut served) = shared.served.lock() {
        *served
            .entry(format!("{} {pattern}", req.method))
            .or_default() += 1;
    }
    let rest = &path[pattern.len().min(path.len())..];
    let handled = match endpoint {
        Endpoint::Kv => match req.method {
            Method::GET => kv_get(shared, req, rest).await,
            Method::PUT => kv_put(shared, req, rest),
            _ => kv_delete(shared, req, rest),
        },
        Endpoint::SessionCreate => session_create(shared, req),
        Endpoint::SessionDestroy => session_destroy(shared, req, rest),
        Endpoint::SessionRenew => session_renew(shared, req, rest),
        Endpoint::SessionInfo => session_info(shared, req, rest).await,
        Endpoint::SessionNode => session_node(shared, req, rest).await,
        Endpoint::SessionList => session_list(shared, req).await,
        Endpoint::Txn => txn::handle(shared, req),
        Endpoint::StatusLeader => Ok(json(&"127.0.0.1:8300")),
        Endpoint::StatusPeers => Ok(json(&["127.0.0.1:8300"])),
        Endpoint::AgentSelf => agent_self(shared, req),
    };
    handled.unwrap_or_else(|reply| reply)
}

pub(super) fn agent_self(shared: &Shared, req: &Req) -> Handled {
    let caller = resolve(shared, req)?;
    need(caller, "agent:read", NODE)?;
    Ok(json(&serde_json::json!({
        "Config": {
            "Datacenter": DATACENTER,
            "NodeName": NODE,
            "Server": true,
            "Version": "1.21.0",
            "Revision": "lockkit-standin",
        },
        "Member": {
            "Name": NODE,
            "Addr": "127.0.0.1",
            "Port": 8301,
            "Status": 1,
            "Tags": { "dc": DATACENTER, "role": "consul" },
        },
        "Meta": {},
    })))
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
