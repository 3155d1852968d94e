//! The HTTP side: connections, routing, query parameters, ACLs, blocking queries
//! and replies, after Consul's `agent/http.go` and the `agent/*_endpoint.go`
//! handlers.
//!
//! Status codes and plain-text bodies are Consul's: a failure that Consul's RPC
//! layer reports (an invalid session, a TTL out of range, an unparsable `cas`) is a
//! 500 with the error text, as the agent's `handleErr` sends it; only what the
//! HTTP layer itself checks is a 400.

use std::convert::Infallible;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::HeaderMap;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio::sync::{Notify, watch};

use super::duration::{go_quote, parse_go_duration};
use super::state::{Behavior, NODE, SERF_HEALTH, SessionSpec, Store};
use super::txn::{self, MAX_OPS, Op};
use super::wire::{
    EntryJson, ReadMetaJson, SessionJson, TxnErrorJson, TxnReplyJson, TxnResultJson,
};

/// The one datacenter.
const DATACENTER: &str = "dc1";
/// Consul's default `kv_max_value_size` (and `txn_max_req_len`): 512 KiB.
const KV_MAX_VALUE: usize = 512 * 1024;
/// The most of a request body the stand-in reads at all.
const BODY_LIMIT: usize = 4 * 1024 * 1024;
/// A blocking query's wait when none is given, and the most it may ask for.
const DEFAULT_WAIT: Duration = Duration::from_secs(5 * 60);
const MAX_WAIT: Duration = Duration::from_secs(10 * 60);
/// Session TTL bounds (Consul's `session_ttl_min` default, `SessionTTLMax`).
const TTL_MIN_NS: i64 = 10_000_000_000;
const TTL_MAX_NS: i64 = 86_400_000_000_000;
/// A `LockDelay` below this many nanoseconds is taken as seconds (Consul's
/// `lockDelayMinThreshold`: clients send `5` meaning 5 s).
const LOCK_DELAY_SECONDS_BELOW: i64 = 1000;

/// State and signals shared by the connections and the TTL task.
#[derive(Debug)]
pub(crate) struct Shared {
    store: Mutex<Store>,
    /// The raft index after each write: what blocking queries wait on.
    changes: watch::Sender<u64>,
    /// Poked whenever a TTL deadline may have moved.
    pub(crate) timers: Notify,
    /// True while the stand-in holds every reply.
    paused: watch::Sender<bool>,
    acl_token: Option<String>,
}

impl Shared {
    pub(crate) fn new(acl_token: Option<String>, ttl_scale: f64) -> Self {
        let store = Store::new(ttl_scale);
        let (changes, _) = watch::channel(store.index());
        let (paused, _) = watch::channel(false);
        Self {
            store: Mutex::new(store),
            changes,
            timers: Notify::new(),
            paused,
            acl_token,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads the store.
    pub(crate) fn read<R>(&self, f: impl FnOnce(&Store) -> R) -> R {
        f(&self.lock())
    }

    /// Changes the store, then wakes blocking queries if the index moved and
    /// (`reschedule`) the TTL task.
    fn change<R>(&self, reschedule: bool, f: impl FnOnce(&mut Store) -> R) -> R {
        let (result, before, after) = {
            let mut store = self.lock();
            let before = store.index();
            let result = f(&mut store);
            (result, before, store.index())
        };
        if after != before {
            self.changes.send_replace(after);
        }
        if reschedule {
            self.timers.notify_one();
        }
        result
    }

    /// A write from a request.
    fn write<R>(&self, f: impl FnOnce(&mut Store) -> R) -> R {
        self.change(true, f)
    }

    /// Invalidates the sessions whose TTL has run out (the TTL task's own write,
    /// which needs no rescheduling).
    pub(crate) fn expire_due(&self) {
        self.change(false, |s| s.expire(Instant::now()));
    }

    pub(crate) fn set_paused(&self, paused: bool) {
        self.paused.send_replace(paused);
    }

    /// Returns once the stand-in is not paused.
    async fn unpaused(&self) {
        let mut rx = self.paused.subscribe();
        let _ = rx.wait_for(|paused| !paused).await;
    }
}

/// Serves one connection until the client closes it (or the task is aborted).
pub(crate) async fn serve(shared: std::sync::Arc<Shared>, stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let service = service_fn(move |req| {
        let shared = shared.clone();
        async move { Ok::<_, Infallible>(handle(&shared, req).await) }
    });
    let _ = http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

async fn handle(shared: &Shared, req: Request<Incoming>) -> Response<Full<Bytes>> {
    shared.unpaused().await;
    let (parts, body) = req.into_parts();
    let reply = match Limited::new(body, BODY_LIMIT).collect().await {
        Err(_) => text(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large"),
        Ok(body) => match Req::new(parts.method, &parts.uri, parts.headers, body.to_bytes()) {
            Some(req) => route(shared, &req).await,
            None => text(StatusCode::BAD_REQUEST, "400 Bad Request"),
        },
    };
    // A reply computed while paused (a blocking query) waits too.
    shared.unpaused().await;
    reply.into_response()
}

// ---------------------------------------------------------------------------
// Requests and replies

/// A request, its path and query decoded the way Go's `net/url` does.
#[derive(Debug)]
struct Req {
    method: Method,
    path: String,
    query: Vec<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
}

impl Req {
    fn new(method: Method, uri: &hyper::Uri, headers: HeaderMap, body: Bytes) -> Option<Self> {
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
    fn has(&self, name: &str) -> bool {
        self.query.iter().any(|(k, _)| k == name)
    }

    /// The first value of a query parameter (`""` when given without one).
    fn get(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The ACL token: `?token=`, then `X-Consul-Token`, then `Authorization:
    /// Bearer`, as Consul looks for it.
    fn token(&self) -> Option<&str> {
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
fn percent_decode(s: &str, plus_is_space: bool) -> Option<Vec<u8>> {
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
fn path_escape(path: &str) -> String {
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
fn query_escape(s: &str) -> String {
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
fn clean_path(path: &str) -> Option<String> {
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
struct Reply {
    status: StatusCode,
    headers: Vec<(&'static str, String)>,
    content_type: Option<&'static str>,
    body: Bytes,
}

/// A handler's outcome: the early exits are replies too.
type Handled = Result<Reply, Reply>;

fn text(status: StatusCode, body: impl Into<String>) -> Reply {
    Reply {
        status,
        headers: Vec::new(),
        content_type: Some("text/plain; charset=utf-8"),
        body: Bytes::from(body.into()),
    }
}

fn empty(status: StatusCode) -> Reply {
    Reply {
        status,
        headers: Vec::new(),
        content_type: None,
        body: Bytes::new(),
    }
}

fn json(value: &impl Serialize) -> Reply {
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

fn bad_request(msg: impl Into<String>) -> Reply {
    text(StatusCode::BAD_REQUEST, msg)
}

fn server_error(msg: impl Into<String>) -> Reply {
    text(StatusCode::INTERNAL_SERVER_ERROR, msg)
}

impl Reply {
    fn status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// The headers of a read (`setMeta`): index (never 0), leader, consistency.
    fn meta(self, index: u64, q: &QueryOpts, acl: bool) -> Self {
        self.header("X-Consul-Index", index.max(1).to_string())
            .header("X-Consul-KnownLeader", "true")
            .header("X-Consul-LastContact", "0")
            .header("X-Consul-Effective-Consistency", q.consistency)
            .header(
                "X-Consul-Default-ACL-Policy",
                if acl { "deny" } else { "allow" },
            )
    }

    fn into_response(self) -> Response<Full<Bytes>> {
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
// Query options, ACLs

/// `?index=`, `?wait=` and the consistency mode of a read.
#[derive(Debug)]
struct QueryOpts {
    min_index: u64,
    wait: Duration,
    consistency: &'static str,
}

/// Consul's `parse`: consistency flags, then `wait` and `index`.
fn parse_query(req: &Req) -> Result<QueryOpts, Reply> {
    let mut stale = req.has("stale");
    let consistent = req.has("consistent");
    if let Some(max_stale) = req.get("max_stale").filter(|v| !v.is_empty()) {
        let ns = parse_go_duration(max_stale)
            .map_err(|_| bad_request(format!("Invalid max_stale value {}", go_quote(max_stale))))?;
        stale |= ns > 0;
    }
    if stale && consistent {
        return Err(bad_request(
            "Cannot specify ?stale with ?consistent, conflicting semantics.",
        ));
    }
    let mut wait = Duration::ZERO;
    if let Some(w) = req.get("wait").filter(|v| !v.is_empty()) {
        let ns = parse_go_duration(w).map_err(|_| bad_request("Invalid wait time"))?;
        wait = Duration::from_nanos(ns.max(0).unsigned_abs());
    }
    let mut min_index = 0;
    if let Some(i) = req.get("index").filter(|v| !v.is_empty()) {
        min_index = i.parse().map_err(|_| bad_request("Invalid index"))?;
    }
    let consistency = if stale {
        "stale"
    } else if consistent {
        "consistent"
    } else {
        "leader"
    };
    Ok(QueryOpts {
        min_index,
        wait,
        consistency,
    })
}

/// Who is asking, once the token is resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Caller {
    /// ACLs off, or the configured token: may do anything.
    Trusted,
    /// No token while ACLs are on: the anonymous token, which may do nothing.
    Anonymous,
}

/// What every RPC does first: forward to `?dc=` (only `dc1` exists), then resolve
/// the token (an unknown one is `403 ACL not found`).
fn resolve(shared: &Shared, req: &Req) -> Result<Caller, Reply> {
    if req
        .get("dc")
        .is_some_and(|dc| !dc.is_empty() && dc != DATACENTER)
    {
        return Err(server_error("No path to datacenter"));
    }
    match (&shared.acl_token, req.token()) {
        (None, _) => Ok(Caller::Trusted),
        (Some(_), None) => Ok(Caller::Anonymous),
        (Some(want), Some(got)) if want == got => Ok(Caller::Trusted),
        (Some(_), Some(_)) => Err(text(StatusCode::FORBIDDEN, "ACL not found")),
    }
}

/// The error text Consul gives the anonymous token for `perm` on `resource`.
fn denial(perm: &str, resource: &str) -> String {
    format!(
        "Permission denied: anonymous token lacks permission '{perm}' on {}. The anonymous \
         token is used implicitly when a request does not specify a token.",
        go_quote(resource)
    )
}

/// Refuses the anonymous caller `perm` on `resource` (403).
fn need(caller: Caller, perm: &str, resource: &str) -> Result<(), Reply> {
    match caller {
        Caller::Trusted => Ok(()),
        Caller::Anonymous => Err(text(StatusCode::FORBIDDEN, denial(perm, resource))),
    }
}

/// Go's `strconv.ParseUint(v, 10, 64)` and its error text (which Consul's KV
/// endpoint hands back as a 500).
fn parse_uint(req: &Req, name: &str) -> Result<Option<u64>, Reply> {
    let Some(v) = req.get(name) else {
        return Ok(None);
    };
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(server_error(format!(
            "strconv.ParseUint: parsing {}: invalid syntax",
            go_quote(v)
        )));
    }
    v.parse().map(Some).map_err(|_| {
        server_error(format!(
            "strconv.ParseUint: parsing {}: value out of range",
            go_quote(v)
        ))
    })
}

/// Consul's `conflictingFlags`: at most one of `flags` may be given.
fn conflicting(req: &Req, flags: &[&str]) -> Result<(), Reply> {
    if flags.iter().filter(|f| req.has(f)).count() < 2 {
        return Ok(());
    }
    let mut pairs: Vec<&(String, String)> = req.query.iter().collect();
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    let encoded: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}={}", query_escape(k), query_escape(v)))
        .collect();
    Err(bad_request(format!(
        "Conflicting flags: {}\n",
        encoded.join("&")
    )))
}

// ---------------------------------------------------------------------------
// Blocking queries

/// Runs a read as a blocking query. `run` returns the index to report, a version
/// that moves only when what the query watches changes (Consul's watch set), and
/// the result. With `?index=N` (N > 0) and a reported index ≤ N, waits until the
/// version moves with an index > N, or until `wait` (5 min by default, 10 at
/// most) plus a random jitter of up to wait/16; then answers with what is there.
async fn blocking<T>(
    shared: &Shared,
    q: &QueryOpts,
    mut run: impl FnMut(&Store) -> (u64, u64, T),
) -> (u64, T) {
    let mut changes = shared.changes.subscribe();
    let (mut index, mut version, mut result) = shared.read(&mut run);
    if q.min_index == 0 || index > q.min_index {
        return (index, result);
    }
    let mut wait = q.wait.min(MAX_WAIT);
    if wait.is_zero() {
        wait = DEFAULT_WAIT;
    }
    let jitter = (wait / 16).mul_f64(fastrand::f64());
    let deadline = tokio::time::Instant::now() + wait + jitter;
    // Each round waits for a write; the deadline ends the loop.
    while let Ok(Ok(())) = tokio::time::timeout_at(deadline, changes.changed()).await {
        let (i, v, r) = shared.read(&mut run);
        if v != version {
            (index, version, result) = (i, v, r);
            if index > q.min_index {
                return (index, result);
            }
        }
    }
    let (i, _, r) = shared.read(&mut run);
    (i, r)
}

// ---------------------------------------------------------------------------
// Routing

/// The endpoints, Go `ServeMux` style: exact paths, and prefixes ending in `/`.
#[derive(Debug, Clone, Copy)]
enum Endpoint {
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

const ROUTES: &[(&str, Endpoint, &[&str])] = &[
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

async fn route(shared: &Shared, req: &Req) -> Reply {
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
        Endpoint::Txn => txn(shared, req),
        Endpoint::StatusLeader => Ok(json(&"127.0.0.1:8300")),
        Endpoint::StatusPeers => Ok(json(&["127.0.0.1:8300"])),
        Endpoint::AgentSelf => agent_self(shared, req),
    };
    handled.unwrap_or_else(|reply| reply)
}

// ---------------------------------------------------------------------------
// KV

async fn kv_get(shared: &Shared, req: &Req, key: &str) -> Handled {
    let q = parse_query(req)?;
    let acl = shared.acl_token.is_some();
    let recurse = req.has("recurse");
    if req.has("keys") {
        let caller = resolve(shared, req)?;
        let separator = if req.has("separator") {
            req.get("separator")
        } else {
            req.get("seperator")
        }
        .unwrap_or_default()
        .to_owned();
        let (index, keys) = blocking(shared, &q, |s| {
            let (index, entries) = s.kv.list(key);
            let keys = if caller == Caller::Anonymous {
                Vec::new()
            } else {
                list_keys(&entries, key, &separator)
            };
            (index, index, keys)
        })
        .await;
        if keys.is_empty() && !key.is_empty() {
            return Ok(empty(StatusCode::NOT_FOUND).meta(index, &q, acl));
        }
        return Ok(json(&keys).meta(index, &q, acl));
    }
    if !recurse && key.is_empty() {
        return Err(bad_request("Missing key name"));
    }
    let caller = resolve(shared, req)?;
    if recurse {
        let (index, entries) = blocking(shared, &q, |s| {
            let (index, mut entries) = s.kv.list(key);
            if caller == Caller::Anonymous {
                entries.clear();
            }
            (index, index, entries)
        })
        .await;
        if entries.is_empty() {
            return Ok(empty(StatusCode::NOT_FOUND).meta(index, &q, acl));
        }
        let body: Vec<EntryJson<'_>> = entries.iter().map(|e| EntryJson::new(e, true)).collect();
        return Ok(json(&body).meta(index, &q, acl));
    }
    need(caller, "key:read", key)?;
    let (index, entry) = blocking(shared, &q, |s| {
        (
            s.kv.key_index(key),
            s.kv.key_version(key),
            s.kv.get(key).cloned(),
        )
    })
    .await;
    let Some(entry) = entry else {
        return Ok(empty(StatusCode::NOT_FOUND).meta(index, &q, acl));
    };
    if req.has("raw") {
        let mut reply = text(StatusCode::OK, "")
            .meta(index, &q, acl)
            .header("X-Content-Type-Options", "nosniff")
            .header("Content-Security-Policy", "sandbox");
        reply.content_type = Some("text/plain");
        reply.body = Bytes::from(entry.value.unwrap_or_default());
        return Ok(reply);
    }
    Ok(json(&[EntryJson::new(&entry, true)]).meta(index, &q, acl))
}

/// `?keys`: the keys under `prefix`, cut after the first `separator` past it.
fn list_keys(entries: &[super::state::Entry], prefix: &str, separator: &str) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for e in entries {
        let after = &e.key[prefix.len().min(e.key.len())..];
        let key = match after.find(separator).filter(|_| !separator.is_empty()) {
            Some(i) => e.key[..prefix.len() + i + separator.len()].to_owned(),
            None => e.key.clone(),
        };
        if keys.last() != Some(&key) {
            keys.push(key);
        }
    }
    keys
}

fn kv_put(shared: &Shared, req: &Req, key: &str) -> Handled {
    parse_query(req)?;
    if key.is_empty() {
        return Err(bad_request("Missing key name"));
    }
    conflicting(req, &["cas", "acquire", "release"])?;
    let flags = parse_uint(req, "flags")?.unwrap_or(0);
    let cas = parse_uint(req, "cas")?;
    let acquire = req
        .has("acquire")
        .then(|| req.get("acquire").unwrap_or_default());
    let release = req
        .has("release")
        .then(|| req.get("release").unwrap_or_default());
    if req.body.len() > KV_MAX_VALUE {
        return Err(text(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "Request body({} bytes) too large, max size: {KV_MAX_VALUE} bytes. See \
                 https://developer.hashicorp.com/docs/agent/config/config-files#kv_max_value_size.",
                req.body.len()
            ),
        ));
    }
    let caller = resolve(shared, req)?;
    need(caller, "key:write", key)?;
    let value = (!req.body.is_empty()).then(|| req.body.to_vec());
    let entry = super::state::Entry::new(key, flags, value);
    let now = Instant::now();
    let outcome: Result<bool, String> = shared.write(|s| {
        if let Some(session) = acquire {
            // Lock-delay is enforced before raft: a refused lock writes nothing.
            if s.lock_delayed(key, now) {
                return Ok(false);
            }
            let idx = s.next_index();
            let exists = s.session(session).is_some();
            s.kv.lock(idx, entry, session, exists).map(|e| e.is_some())
        } else if let Some(session) = release {
            let idx = s.next_index();
            s.kv.unlock(idx, entry, session).map(|e| e.is_some())
        } else if let Some(cas) = cas {
            let idx = s.next_index();
            Ok(s.kv.cas(idx, entry, cas).is_some())
        } else {
            let idx = s.next_index();
            s.kv.set(idx, entry);
            Ok(true)
        }
    });
    outcome.map(|ok| json(&ok)).map_err(server_error)
}

fn kv_delete(shared: &Shared, req: &Req, key: &str) -> Handled {
    parse_query(req)?;
    conflicting(req, &["recurse", "cas"])?;
    let recurse = req.has("recurse");
    if !recurse && key.is_empty() {
        return Err(bad_request("Missing key name"));
    }
    let cas = parse_uint(req, "cas")?;
    let caller = resolve(shared, req)?;
    need(caller, "key:write", key)?;
    let deleted = shared.write(|s| {
        let idx = s.next_index();
        match cas {
            Some(cas) => s.kv.delete_cas(idx, key, cas),
            None if recurse => {
                s.kv.delete_tree(idx, key);
                true
            }
            None => {
                s.kv.delete(idx, key);
                true
            }
        }
    });
    Ok(json(&deleted))
}

// ---------------------------------------------------------------------------
// Sessions

/// `/v1/session/create`'s body, decoded like Consul's `decodeBody` with its
/// `FixupLockDelay` and checks fix-ups.
#[derive(Debug)]
struct CreateRequest {
    name: String,
    node: String,
    lock_delay_ns: i64,
    behavior: String,
    ttl: String,
    node_checks: Vec<String>,
    service_checks: Vec<String>,
}

fn decode_create(body: &[u8]) -> Result<CreateRequest, String> {
    let mut out = CreateRequest {
        name: String::new(),
        node: NODE.to_owned(),
        lock_delay_ns: 15_000_000_000,
        behavior: String::new(),
        ttl: String::new(),
        node_checks: vec![SERF_HEALTH.to_owned()],
        service_checks: Vec::new(),
    };
    if body.is_empty() {
        return Ok(out);
    }
    let doc: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let obj = match doc {
        Value::Null => return Ok(out),
        Value::Object(obj) => obj,
        _ => {
            return Err(
                "json: cannot unmarshal non-object into Go value of type structs.Session".into(),
            );
        }
    };
    let field = |name: &str| {
        obj.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    };
    let string = |name: &str| -> Result<Option<String>, String> {
        match field(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("'{name}' expected type 'string'")),
        }
    };
    let strings = |name: &str| -> Result<Option<Vec<String>>, String> {
        match field(name) {
            None => Ok(None),
            Some(Value::Null) => Ok(Some(Vec::new())),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .map(Some)
                .ok_or_else(|| format!("'{name}' expected a list of strings")),
            Some(_) => Err(format!("'{name}' expected a list of strings")),
        }
    };
    if let Some(v) = string("Name")? {
        out.name = v;
    }
    if let Some(v) = string("Node")?.filter(|v| !v.is_empty()) {
        out.node = v;
    }
    if let Some(v) = string("Behavior")? {
        out.behavior = v;
    }
    if let Some(v) = string("TTL")? {
        out.ttl = v;
    }
    match field("LockDelay") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => out.lock_delay_ns = seconds_if_small(parse_go_duration(s)?),
        // Go's time.Duration(float64): truncated toward zero.
        Some(Value::Number(n)) => {
            out.lock_delay_ns = seconds_if_small(n.as_f64().map_or(0, |f| f as i64));
        }
        Some(_) => return Err("'LockDelay' expected a duration".into()),
    }
    let checks = strings("Checks")?;
    let node_checks = strings("NodeChecks")?;
    if checks.is_some() || node_checks.is_some() {
        let mut all = node_checks.unwrap_or_default();
        for c in checks.unwrap_or_default() {
            if !all.contains(&c) {
                all.push(c);
            }
        }
        out.node_checks = all;
    }
    match field("ServiceChecks") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for item in items {
                let id = item
                    .as_object()
                    .and_then(|o| o.iter().find(|(k, _)| k.eq_ignore_ascii_case("ID")))
                    .and_then(|(_, v)| v.as_str())
                    .ok_or("'ServiceChecks' expected objects with an ID")?;
                out.service_checks.push(id.to_owned());
            }
        }
        Some(_) => return Err("'ServiceChecks' expected a list".into()),
    }
    Ok(out)
}

/// `lockDelayMinThreshold`: a lock-delay under 1000 ns means seconds.
fn seconds_if_small(ns: i64) -> i64 {
    if ns < LOCK_DELAY_SECONDS_BELOW {
        ns.saturating_mul(1_000_000_000)
    } else {
        ns
    }
}

fn session_create(shared: &Shared, req: &Req) -> Handled {
    let create =
        decode_create(&req.body).map_err(|e| bad_request(format!("Request decode failed: {e}")))?;
    let caller = resolve(shared, req)?;
    need(caller, "session:write", &create.node)?;
    let behavior = match create.behavior.as_str() {
        "" | "release" => Behavior::Release,
        "delete" => Behavior::Delete,
        other => return Err(server_error(format!("Invalid Behavior setting '{other}'"))),
    };
    let mut ttl_ns = 0;
    if !create.ttl.is_empty() {
        ttl_ns = parse_go_duration(&create.ttl)
            .map_err(|e| server_error(format!("Session TTL '{}' invalid: {e}", create.ttl)))?;
        if ttl_ns != 0 && !(TTL_MIN_NS..=TTL_MAX_NS).contains(&ttl_ns) {
            return Err(server_error(format!(
                "Invalid Session TTL '{ttl_ns}', must be between [10s=24h0m0s]"
            )));
        }
    }
    // The stand-in's node has one check, serfHealth, always passing.
    let missing_check = create
        .node_checks
        .iter()
        .find(|c| *c != SERF_HEALTH)
        .or(create.service_checks.first())
        .cloned();
    let spec = SessionSpec {
        name: create.name,
        lock_delay_ns: create.lock_delay_ns,
        behavior,
        ttl: create.ttl,
        ttl_ns,
        node_checks: create.node_checks,
    };
    let node_known = create.node == NODE;
    let created = shared.write(|s| {
        // The node and checks are looked up in the raft apply: a failure still
        // takes an index.
        if !node_known {
            s.next_index();
            return Err("Missing node registration".to_owned());
        }
        if let Some(check) = &missing_check {
            s.next_index();
            return Err(format!("Missing check '{check}' registration"));
        }
        Ok(s.create_session(spec, Instant::now()))
    });
    let id = created.map_err(server_error)?;
    Ok(json(&serde_json::json!({ "ID": id })))
}

fn session_destroy(shared: &Shared, req: &Req, id: &str) -> Handled {
    if id.is_empty() {
        return Err(bad_request("Missing session"));
    }
    let caller = resolve(shared, req)?;
    need(caller, "session:write", NODE)?;
    shared.write(|s| s.destroy_session(id, Instant::now()));
    Ok(json(&true))
}

fn session_renew(shared: &Shared, req: &Req, id: &str) -> Handled {
    parse_query(req)?;
    if id.is_empty() {
        return Err(bad_request("Missing session"));
    }
    let caller = resolve(shared, req)?;
    if shared.read(|s| s.session(id).is_none()) {
        return Err(text(
            StatusCode::NOT_FOUND,
            format!("Session id '{id}' not found"),
        ));
    }
    need(caller, "session:write", NODE)?;
    match shared.write(|s| s.renew(id, Instant::now())) {
        Some(session) => Ok(json(&[SessionJson::new(&session)])),
        // Invalidated in between.
        None => Err(text(
            StatusCode::NOT_FOUND,
            format!("Session id '{id}' not found"),
        )),
    }
}

/// The session reads: `[]` rather than `null` when there are none, and nothing for
/// the anonymous caller (ACL filtering, not a 403).
async fn session_read(
    shared: &Shared,
    req: &Req,
    pick: impl Fn(&super::state::Session) -> bool,
) -> Handled {
    let q = parse_query(req)?;
    let caller = resolve(shared, req)?;
    let (index, sessions) = blocking(shared, &q, |s| {
        let index = s.session_table_index();
        let list: Vec<super::state::Session> = if caller == Caller::Anonymous {
            Vec::new()
        } else {
            s.sessions().filter(|x| pick(x)).cloned().collect()
        };
        (index, index, list)
    })
    .await;
    let body: Vec<SessionJson<'_>> = sessions.iter().map(SessionJson::new).collect();
    Ok(json(&body).meta(index, &q, shared.acl_token.is_some()))
}

async fn session_info(shared: &Shared, req: &Req, id: &str) -> Handled {
    if id.is_empty() {
        return Err(bad_request("Missing session"));
    }
    session_read(shared, req, |s| s.id == id).await
}

async fn session_node(shared: &Shared, req: &Req, node: &str) -> Handled {
    if node.is_empty() {
        return Err(bad_request("Missing node name"));
    }
    session_read(shared, req, |_| node == NODE).await
}

async fn session_list(shared: &Shared, req: &Req) -> Handled {
    session_read(shared, req, |_| true).await
}

// ---------------------------------------------------------------------------
// Transactions, agent

fn txn(shared: &Shared, req: &Req) -> Handled {
    if req.body.len() > KV_MAX_VALUE {
        return Err(text(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("Request body too large, max size: {KV_MAX_VALUE} bytes"),
        ));
    }
    let ops =
        txn::parse(&req.body).map_err(|e| bad_request(format!("Failed to parse body: {e}")))?;
    if ops.len() > MAX_OPS {
        return Err(text(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "Transaction contains too many operations ({} > {MAX_OPS})",
                ops.len()
            ),
        ));
    }
    if let Some(op) = ops
        .iter()
        .find(|op| op.value.as_ref().is_some_and(|v| v.len() > KV_MAX_VALUE))
    {
        return Err(text(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "Value for key {} is too large ({} > {KV_MAX_VALUE} bytes)",
                go_quote(&op.key),
                op.value.as_ref().map_or(0, Vec::len)
            ),
        ));
    }
    let read_only = !ops.iter().any(|op| txn::is_write(&op.verb));
    let q = if read_only {
        Some(parse_query(req)?)
    } else {
        None
    };
    let caller = resolve(shared, req)?;
    let denied = |op: &Op| match (caller, op.verb.as_str()) {
        (Caller::Trusted, _) | (_, "get" | "get-or-empty" | "get-tree") => None,
        (_, "check-index" | "check-session") => Some(denial("key:read", &op.key)),
        _ => Some(denial("key:write", &op.key)),
    };
    let anonymous = caller == Caller::Anonymous;
    let outcome = shared.write(|s| txn::run(s, &ops, &denied, anonymous, Instant::now()));
    let failed = !outcome.errors.is_empty();
    let body = TxnReplyJson {
        results: (!failed).then(|| {
            outcome
                .results
                .iter()
                .map(|(e, with_value)| TxnResultJson {
                    kv: EntryJson::new(e, *with_value),
                })
                .collect()
        }),
        errors: failed.then(|| {
            outcome
                .errors
                .iter()
                .map(|(i, what)| TxnErrorJson {
                    op_index: *i,
                    what: what.clone(),
                })
                .collect()
        }),
        read_meta: q.as_ref().map(|q| ReadMetaJson {
            index: 0,
            last_contact: 0,
            known_leader: true,
            consistency_level: q.consistency,
            not_modified: false,
            backend: 0,
            results_filtered_by_acls: false,
        }),
    };
    let mut reply = json(&body);
    if failed {
        reply = reply.status(StatusCode::CONFLICT);
    }
    if read_only {
        reply = reply
            .header("X-Consul-LastContact", "0")
            .header("X-Consul-KnownLeader", "true");
    }
    Ok(reply)
}

fn agent_self(shared: &Shared, req: &Req) -> Handled {
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
    fn keys_are_cut_at_the_separator() {
        let e = |k: &str| super::super::state::Entry::new(k, 0, None);
        let entries = [e("p/a"), e("p/b/c"), e("p/b/d"), e("p/e")];
        assert_eq!(list_keys(&entries, "p/", "/"), ["p/a", "p/b/", "p/e"]);
        assert_eq!(list_keys(&entries, "p/", "").len(), 4);
    }

    #[test]
    fn small_lock_delays_are_seconds() {
        assert_eq!(seconds_if_small(15), 15_000_000_000);
        assert_eq!(seconds_if_small(0), 0);
        assert_eq!(seconds_if_small(2_000_000), 2_000_000);
    }

    /// Blocks on `key` (missing or not) from its current index for `wait`.
    fn block_on_key(
        shared: &std::sync::Arc<Shared>,
        key: &'static str,
        wait: Duration,
    ) -> tokio::task::JoinHandle<(Duration, u64)> {
        let min_index = shared.read(|s| s.kv.key_index(key));
        let q = QueryOpts {
            min_index,
            wait,
            consistency: "leader",
        };
        let sh = shared.clone();
        tokio::spawn(async move {
            let start = Instant::now();
            let (index, _) = blocking(&sh, &q, |s| {
                (s.kv.key_index(key), s.kv.key_version(key), ())
            })
            .await;
            (start.elapsed(), index)
        })
    }

    fn set(shared: &Shared, key: &str) {
        shared.write(|s| {
            let idx = s.next_index();
            s.kv.set(idx, super::super::state::Entry::new(key, 0, None));
        });
    }

    // The runtime is single-threaded: after `yield_now` the spawned query has run
    // up to its wait, so the writes below come while it blocks.
    #[tokio::test]
    async fn a_blocked_key_read_wakes_for_its_key_only() {
        let shared = std::sync::Arc::new(Shared::new(None, 1.0));
        let wait = Duration::from_millis(250);
        let missing = block_on_key(&shared, "k", wait);
        tokio::task::yield_now().await;
        set(&shared, "other");
        let (took, index) = missing.await.unwrap();
        assert!(took >= wait, "woken by another key: {took:?}");
        assert_eq!(index, shared.read(|s| s.kv.key_index("k")));

        let woken = block_on_key(&shared, "k", Duration::from_secs(5));
        tokio::task::yield_now().await;
        set(&shared, "k");
        let (took, index) = woken.await.unwrap();
        assert!(
            took < Duration::from_secs(1),
            "not woken by its key: {took:?}"
        );
        assert_eq!(index, shared.read(|s| s.index()));
    }

    #[test]
    fn query_values_decode() {
        assert_eq!(percent_decode("a%2Fb+c", true), Some(b"a/b c".to_vec()));
        assert_eq!(percent_decode("a%2", false), None);
    }
}
