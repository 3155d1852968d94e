//! What reads and writes share: the query options (`?index`, `?wait`, consistency),
//! ACL resolution, Consul's parameter errors, and blocking queries.

use std::time::Duration;

use hyper::StatusCode;

use super::duration::{go_quote, parse_go_duration};
use super::http::{DATACENTER, Reply, Req, bad_request, query_escape, server_error, text};
use super::server::Shared;
use super::state::Store;

/// A blocking query's wait when none is given, and the most it may ask for.
const DEFAULT_WAIT: Duration = Duration::from_secs(5 * 60);
const MAX_WAIT: Duration = Duration::from_secs(10 * 60);

/// `?index=`, `?wait=` and the consistency mode of a read.
#[derive(Debug)]
pub(super) struct QueryOpts {
    pub(super) min_index: u64,
    pub(super) wait: Duration,
    pub(super) consistency: &'static str,
}

/// Consul's `parse`: consistency flags, then `wait` and `index`.
pub(super) fn parse_query(req: &Req) -> Result<QueryOpts, Reply> {
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
pub(super) enum Caller {
    /// ACLs off, or the configured token: may do anything.
    Trusted,
    /// No token while ACLs are on: the anonymous token, which may do nothing.
    Anonymous,
}

/// What every RPC does first: forward to `?dc=` (only `dc1` exists), then resolve
/// the token (an unknown one is `403 ACL not found`).
pub(super) fn resolve(shared: &Shared, req: &Req) -> Result<Caller, Reply> {
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
pub(super) fn denial(perm: &str, resource: &str) -> String {
    format!(
        "Permission denied: anonymous token lacks permission '{perm}' on {}. The anonymous \
         token is used implicitly when a request does not specify a token.",
        go_quote(resource)
    )
}

/// Refuses the anonymous caller `perm` on `resource` (403).
pub(super) fn need(caller: Caller, perm: &str, resource: &str) -> Result<(), Reply> {
    match caller {
        Caller::Trusted => Ok(()),
        Caller::Anonymous => Err(text(StatusCode::FORBIDDEN, denial(perm, resource))),
    }
}

/// Go's `strconv.ParseUint(v, 10, 64)` and its error text (which Consul's KV
/// endpoint hands back as a 500).
pub(super) fn parse_uint(req: &Req, name: &str) -> Result<Option<u64>, Reply> {
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
pub(super) fn conflicting(req: &Req, flags: &[&str]) -> Result<(), Reply> {
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
pub(super) async fn blocking<T>(
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

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

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
}
