//! `/v1/kv/<key>`, after Consul's `agent/kvs_endpoint.go` and
//! `agent/consul/kvs_endpoint.go`: reads (one key, `?recurse`, `?keys`, `?raw`),
//! writes (`?flags`, `?cas`, `?acquire`, `?release`; lock-delay checked before
//! the write, as Consul's leader does) and deletes (`?cas`, `?recurse`).

use std::time::Instant;

use bytes::Bytes;
use hyper::StatusCode;

use super::http::{Handled, Req, bad_request, empty, json, server_error, text};
use super::query::{Caller, blocking, conflicting, need, parse_query, parse_uint, resolve};
use super::server::Shared;
use super::state::Entry;
use super::wire::EntryJson;

/// Consul's default `kv_max_value_size` (and `txn_max_req_len`): 512 KiB.
pub(super) const KV_MAX_VALUE: usize = 512 * 1024;

pub(super) async fn kv_get(shared: &Shared, req: &Req, key: &str) -> Handled {
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
pub(super) fn list_keys(entries: &[Entry], prefix: &str, separator: &str) -> Vec<String> {
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

pub(super) fn kv_put(shared: &Shared, req: &Req, key: &str) -> Handled {
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
    let entry = Entry::new(key, flags, value);
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

pub(super) fn kv_delete(shared: &Shared, req: &Req, key: &str) -> Handled {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_cut_at_the_separator() {
        let e = |k: &str| super::Entry::new(k, 0, None);
        let entries = [e("p/a"), e("p/b/c"), e("p/b/d"), e("p/e")];
        assert_eq!(list_keys(&entries, "p/", "/"), ["p/a", "p/b/", "p/e"]);
        assert_eq!(list_keys(&entries, "p/", "").len(), 4);
    }
}
