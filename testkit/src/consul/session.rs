//! `/v1/session/*`, after Consul's `agent/session_endpoint.go` and
//! `agent/consul/session_endpoint.go`: create (with `FixupLockDelay`: a lock-delay
//! under 1000 ns means seconds), destroy, renew, and the reads (`info`, `node`,
//! `list`; `[]` for none).

use std::time::Instant;

use hyper::StatusCode;
use serde_json::Value;

use super::duration::parse_go_duration;
use super::http::{Handled, Req, bad_request, json, server_error, text};
use super::query::{Caller, blocking, need, parse_query, resolve};
use super::server::Shared;
use super::state::{Behavior, NODE, SERF_HEALTH, Session, SessionSpec};
use super::wire::SessionJson;

/// Session TTL bounds (Consul's `session_ttl_min` default, `SessionTTLMax`).
pub(super) const TTL_MIN_NS: i64 = 10_000_000_000;
const TTL_MAX_NS: i64 = 86_400_000_000_000;
/// A `LockDelay` below this many nanoseconds is taken as seconds (Consul's
/// `lockDelayMinThreshold`: clients send `5` meaning 5 s).
const LOCK_DELAY_SECONDS_BELOW: i64 = 1000;

/// `/v1/session/create`'s body, decoded like Consul's `decodeBody` with its
/// `FixupLockDelay` and checks fix-ups.
#[derive(Debug)]
pub(super) struct CreateRequest {
    name: String,
    node: String,
    lock_delay_ns: i64,
    behavior: String,
    ttl: String,
    node_checks: Vec<String>,
    service_checks: Vec<String>,
}

pub(super) fn decode_create(body: &[u8]) -> Result<CreateRequest, String> {
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
pub(super) fn seconds_if_small(ns: i64) -> i64 {
    if ns < LOCK_DELAY_SECONDS_BELOW {
        ns.saturating_mul(1_000_000_000)
    } else {
        ns
    }
}

pub(super) fn session_create(shared: &Shared, req: &Req) -> Handled {
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
        if ttl_ns != 0 && !(shared.min_ttl_ns..=TTL_MAX_NS).contains(&ttl_ns) {
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

pub(super) fn session_destroy(shared: &Shared, req: &Req, id: &str) -> Handled {
    if id.is_empty() {
        return Err(bad_request("Missing session"));
    }
    let caller = resolve(shared, req)?;
    need(caller, "session:write", NODE)?;
    shared.write(|s| s.destroy_session(id, Instant::now()));
    Ok(json(&true))
}

pub(super) fn session_renew(shared: &Shared, req: &Req, id: &str) -> Handled {
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
pub(super) async fn session_read(
    shared: &Shared,
    req: &Req,
    pick: impl Fn(&Session) -> bool,
) -> Handled {
    let q = parse_query(req)?;
    let caller = resolve(shared, req)?;
    let (index, sessions) = blocking(shared, &q, |s| {
        let index = s.session_table_index();
        let list: Vec<Session> = if caller == Caller::Anonymous {
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

pub(super) async fn session_info(shared: &Shared, req: &Req, id: &str) -> Handled {
    if id.is_empty() {
        return Err(bad_request("Missing session"));
    }
    session_read(shared, req, |s| s.id == id).await
}

pub(super) async fn session_node(shared: &Shared, req: &Req, node: &str) -> Handled {
    if node.is_empty() {
        return Err(bad_request("Missing node name"));
    }
    session_read(shared, req, |_| node == NODE).await
}

pub(super) async fn session_list(shared: &Shared, req: &Req) -> Handled {
    session_read(shared, req, |_| true).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_lock_delays_are_seconds() {
        assert_eq!(seconds_if_small(15), 15_000_000_000);
        assert_eq!(seconds_if_small(0), 0);
        assert_eq!(seconds_if_small(2_000_000), 2_000_000);
    }
}
