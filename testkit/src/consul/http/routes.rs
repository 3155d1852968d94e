//! The routing of Go's `ServeMux` (exact paths, `/`-ended prefixes, 301 to a clean
//! path, 404 with an empty body, 405 with `Allow`), the endpoints' table, and
//! `/v1/agent/self`.

use hyper::{Method, StatusCode};

use super::super::kv::{kv_delete, kv_get, kv_put};
use super::super::query::{need, resolve};
use super::super::server::Shared;
use super::super::session::{
    session_create, session_destroy, session_info, session_list, session_node, session_renew,
};
use super::super::state::NODE;
use super::super::txn;
use super::DATACENTER;
use super::reply::{Handled, Reply, empty, json, text};
use super::request::{Req, clean_path, path_escape, query_escape};

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

/// Each endpoint's pattern and the methods it allows.
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

/// The reply to `req`: a redirect, an error, or its endpoint's handler's reply.
pub(crate) async fn route(shared: &Shared, req: &Req) -> Reply {
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
    if shared.leaderless() {
        match endpoint {
            Endpoint::StatusLeader => return json(&""),
            // The agent answers these itself.
            Endpoint::StatusPeers | Endpoint::AgentSelf => {}
            // Consul's answer while its servers elect a leader (structs.ErrNoLeader).
            _ => return text(StatusCode::INTERNAL_SERVER_ERROR, "No cluster leader"),
        }
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

/// `GET /v1/agent/self`: the one node's configuration and membership.
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
