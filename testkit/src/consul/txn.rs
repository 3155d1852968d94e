//! `/v1/txn`: KV operations applied all or nothing, after Consul's
//! `agent/txn_endpoint.go`, `agent/consul/txn_endpoint.go` and
//! `agent/consul/state/txn.go`.
//!
//! - Checks that need no state run first over every operation (`Must provide
//!   key`, ACLs, lock-delay): any failure rolls back without a raft write.
//! - Then every operation runs in order on a copy of the KV table, later ones
//!   seeing earlier ones; *all* failures are reported, each with its `OpIndex`.
//!   The copy replaces the table only if none failed. A transaction with a write
//!   verb takes a raft index either way.
//! - Results: one `KV` entry for `set`, `cas`, `lock`, `unlock`, `get`,
//!   `get-or-empty`, `check-index`, `check-session`, and one per entry for
//!   `get-tree`; none for the deletes and `check-not-exists`. `Value` is `null`
//!   except for the three gets.

use std::time::Instant;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};

use hyper::StatusCode;

use super::duration::go_quote;
use super::http::{Handled, Req, bad_request, json, text};
use super::kv::KV_MAX_VALUE;
use super::query::{Caller, denial, parse_query, resolve};
use super::server::Shared;
use super::state::{Entry, Store};
use super::wire::{EntryJson, ReadMetaJson, TxnErrorJson, TxnReplyJson, TxnResultJson};

/// Consul's `maxTxnOps`: 128 in current releases (older ones allowed 64).
const MAX_OPS: usize = 128;

/// One KV operation of a transaction, as the client sent it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Op {
    /// False for an element without a `KV` member.
    pub(crate) is_kv: bool,
    pub(crate) verb: String,
    pub(crate) key: String,
    pub(crate) value: Option<Vec<u8>>,
    pub(crate) flags: u64,
    pub(crate) index: u64,
    pub(crate) session: String,
}

/// What a transaction did: results if it applied, errors if it rolled back.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// Each result entry, and whether its value is shown.
    pub(crate) results: Vec<(Entry, bool)>,
    pub(crate) errors: Vec<(usize, String)>,
}

/// Does `verb` change the store (and so go through raft)?
pub(crate) fn is_write(verb: &str) -> bool {
    matches!(
        verb,
        "set" | "delete" | "delete-cas" | "delete-tree" | "cas" | "lock" | "unlock"
    )
}

/// A field of a JSON object, matched without regard to case (as Go's decoder does).
fn field<'a>(obj: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    obj.iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v)
        .filter(|v| !v.is_null())
}

fn string_field(obj: &Map<String, Value>, name: &str) -> Result<String, String> {
    match field(obj, name) {
        None => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!(
            "json: cannot unmarshal {} into Go struct field KVTxnOp.KV.{name} of type string",
            json_kind(other)
        )),
    }
}

fn u64_field(obj: &Map<String, Value>, name: &str) -> Result<u64, String> {
    match field(obj, name) {
        None => Ok(0),
        Some(v) => v.as_u64().ok_or_else(|| {
            format!(
                "json: cannot unmarshal {} into Go struct field KVTxnOp.KV.{name} of type uint64",
                json_kind(v)
            )
        }),
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Parses a request body into operations; the error is the text after Consul's
/// `Failed to parse body: `.
pub(crate) fn parse(body: &[u8]) -> Result<Vec<Op>, String> {
    let doc: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let Value::Array(items) = doc else {
        return Err(format!(
            "json: cannot unmarshal {} into Go value of type api.TxnOps",
            json_kind(&doc)
        ));
    };
    items.iter().map(parse_op).collect()
}

fn parse_op(item: &Value) -> Result<Op, String> {
    let Value::Object(obj) = item else {
        return Err(format!(
            "json: cannot unmarshal {} into Go value of type api.TxnOp",
            json_kind(item)
        ));
    };
    if let Some(other) = ["Node", "Service", "Check", "Session"]
        .iter()
        .find(|name| field(obj, name).is_some())
    {
        return Err(format!(
            "the Consul stand-in supports only KV operations in a transaction, not {other}"
        ));
    }
    let Some(kv) = field(obj, "KV") else {
        return Ok(Op::default());
    };
    let Value::Object(kv) = kv else {
        return Err(format!(
            "json: cannot unmarshal {} into Go struct field TxnOp.KV of type api.KVTxnOp",
            json_kind(kv)
        ));
    };
    let value = match field(kv, "Value") {
        None => None,
        Some(Value::String(s)) => Some(
            STANDARD
                .decode(s)
                .map_err(|e| format!("illegal base64 data: {e}"))?,
        ),
        Some(other) => {
            return Err(format!(
                "json: cannot unmarshal {} into Go struct field KVTxnOp.KV.Value of type []uint8",
                json_kind(other)
            ));
        }
    };
    Ok(Op {
        is_kv: true,
        verb: string_field(kv, "Verb")?,
        key: string_field(kv, "Key")?,
        value,
        flags: u64_field(kv, "Flags")?,
        index: u64_field(kv, "Index")?,
        session: string_field(kv, "Session")?,
    })
}

/// Runs `ops` against `store`. `denied` gives the ACL error for an operation the
/// caller may not run; `hide_results` drops every result (what ACL filtering does
/// to an anonymous caller's reads).
pub(crate) fn run(
    store: &mut Store,
    ops: &[Op],
    denied: &dyn Fn(&Op) -> Option<String>,
    hide_results: bool,
    now: Instant,
) -> Outcome {
    // The pre-checks, before raft.
    let mut errors = Vec::new();
    for (i, op) in ops.iter().enumerate().filter(|(_, op)| op.is_kv) {
        if op.key.is_empty() && op.verb != "delete-tree" {
            errors.push((i, "Must provide key".to_owned()));
        } else if let Some(why) = denied(op) {
            errors.push((i, why));
        } else if op.verb == "lock" && store.lock_delayed(&op.key, now) {
            errors.push((
                i,
                format!("failed to lock key {} due to lock delay", go_quote(&op.key)),
            ));
        }
    }
    if !errors.is_empty() {
        return Outcome {
            results: Vec::new(),
            errors,
        };
    }

    let writes = ops.iter().any(|op| is_write(&op.verb));
    let idx = if writes {
        store.next_index()
    } else {
        store.index()
    };
    let mut kv = store.kv.clone();
    let mut results = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        if !op.is_kv {
            errors.push((i, "no operation specified".to_owned()));
            continue;
        }
        let key = go_quote(&op.key);
        let entry = Entry::new(&op.key, op.flags, op.value.clone());
        let outcome: Result<Option<(Entry, bool)>, String> = match op.verb.as_str() {
            "set" => Ok(Some((kv.set(idx, entry), false))),
            "cas" => kv
                .cas(idx, entry, op.index)
                .map(|e| Some((e, false)))
                .ok_or_else(|| format!("failed to set key {key}, index is stale")),
            "lock" => {
                let exists = store.session(&op.session).is_some();
                match kv.lock(idx, entry, &op.session, exists) {
                    Ok(Some(e)) => Ok(Some((e, false))),
                    Ok(None) => Err(format!("failed to lock key {key}, lock is already held")),
                    Err(e) => Err(e),
                }
            }
            "unlock" => match kv.unlock(idx, entry, &op.session) {
                Ok(Some(e)) => Ok(Some((e, false))),
                Ok(None) => Err(format!(
                    "failed to unlock key {key}, lock isn't held, or is held by another session"
                )),
                Err(e) => Err(e),
            },
            "get" => kv
                .get(&op.key)
                .map(|e| Some((e.clone(), true)))
                .ok_or_else(|| format!("key {key} doesn't exist")),
            "get-or-empty" => Ok(Some(match kv.get(&op.key) {
                Some(e) => (e.clone(), true),
                None => {
                    let mut e = Entry::new(&op.key, op.flags, None);
                    e.session = (!op.session.is_empty()).then(|| op.session.clone());
                    e.modify_index = op.index;
                    (e, true)
                }
            })),
            "get-tree" => {
                let (_, entries) = kv.list(&op.key);
                results.extend(entries.into_iter().map(|e| (e, true)));
                Ok(None)
            }
            "check-index" => match kv.get(&op.key) {
                None => Err(format!("failed to check index, key {key} doesn't exist")),
                Some(e) if e.modify_index != op.index => Err(format!(
                    "failed index check for key {key}, current modify index {} != {}",
                    e.modify_index, op.index
                )),
                Some(e) => Ok(Some((e.clone(), false))),
            },
            "check-session" => match kv.get(&op.key) {
                None => Err(format!("failed to check session, key {key} doesn't exist")),
                Some(e) if e.session.as_deref().unwrap_or_default() != op.session => Err(format!(
                    "failed session check for key {key}, current session {} != {}",
                    go_quote(e.session.as_deref().unwrap_or_default()),
                    go_quote(&op.session)
                )),
                Some(e) => Ok(Some((e.clone(), false))),
            },
            "check-not-exists" => match kv.get(&op.key) {
                Some(_) => Err(format!("key {key} exists")),
                None => Ok(None),
            },
            "delete" => {
                kv.delete(idx, &op.key);
                Ok(None)
            }
            "delete-cas" => {
                if kv.delete_cas(idx, &op.key, op.index) {
                    Ok(None)
                } else {
                    Err(format!("failed to delete key {key}, index is stale"))
                }
            }
            "delete-tree" => {
                kv.delete_tree(idx, &op.key);
                Ok(None)
            }
            other => Err(format!("unknown KV verb {}", go_quote(other))),
        };
        match outcome {
            Ok(Some(result)) => results.push(result),
            Ok(None) => {}
            Err(what) => errors.push((i, what)),
        }
    }
    if !errors.is_empty() {
        return Outcome {
            results: Vec::new(),
            errors,
        };
    }
    if writes {
        store.kv = kv;
    }
    if hide_results {
        results.clear();
    }
    Outcome { results, errors }
}

/// `PUT /v1/txn`: sizes and parsing checked as Consul's agent does (413, 400),
/// then the operations run; 200 with results, or 409 with every error.
pub(super) fn handle(shared: &Shared, req: &Req) -> Handled {
    if req.body.len() > KV_MAX_VALUE {
        return Err(text(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("Request body too large, max size: {KV_MAX_VALUE} bytes"),
        ));
    }
    let ops = parse(&req.body).map_err(|e| bad_request(format!("Failed to parse body: {e}")))?;
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
    let read_only = !ops.iter().any(|op| is_write(&op.verb));
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
    let outcome = shared.write(|s| run(s, &ops, &denied, anonymous, Instant::now()));
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
