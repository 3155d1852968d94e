//! The Consul stand-in keeps Consul's documented HTTP semantics, over real HTTP:
//! sessions, TTL invalidation, lock-delay, behaviors, acquire/release/cas, the
//! transaction endpoint, blocking queries, indexes, ACLs, errors, pause and a lost
//! leader.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use lockkit_testkit::{ConsulStandIn, StandInOptions};
use reqwest::Method;
use serde_json::{Value, json};

/// One reply: status, `X-Consul-Index` (if any), headers and body.
#[derive(Debug)]
struct Reply {
    status: u16,
    index: Option<u64>,
    headers: reqwest::header::HeaderMap,
    text: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.text))
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// A client for one stand-in, optionally sending a token.
struct Client {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
}

impl Client {
    fn new(consul: &ConsulStandIn) -> Self {
        Self {
            http: http_client(),
            base: format!("http://{}", consul.addr()),
            token: None,
        }
    }

    fn with_token(consul: &ConsulStandIn, token: &str) -> Self {
        Self {
            token: Some(token.to_owned()),
            ..Self::new(consul)
        }
    }

    async fn send(&self, method: Method, path: &str, body: impl Into<reqwest::Body>) -> Reply {
        let mut r = self
            .http
            .request(method, format!("{}{path}", self.base))
            .body(body)
            .timeout(Duration::from_secs(5));
        if let Some(t) = &self.token {
            r = r.header("X-Consul-Token", t);
        }
        let resp = r.send().await.unwrap();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let index = headers
            .get("X-Consul-Index")
            .map(|v| v.to_str().unwrap().parse().unwrap());
        let text = resp.text().await.unwrap();
        Reply {
            status,
            index,
            headers,
            text,
        }
    }

    async fn get(&self, path: &str) -> Reply {
        self.send(Method::GET, path, "").await
    }

    async fn put(&self, path: &str, body: impl Into<reqwest::Body>) -> Reply {
        self.send(Method::PUT, path, body).await
    }

    async fn delete(&self, path: &str) -> Reply {
        self.send(Method::DELETE, path, "").await
    }

    /// Creates a session from a JSON body; returns its ID.
    async fn session(&self, body: Value) -> String {
        let r = self.put("/v1/session/create", body.to_string()).await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()["ID"].as_str().unwrap().to_owned()
    }

    /// `PUT /v1/kv/<key>?<query>` answering `true` or `false`.
    async fn kv_put(&self, key_and_query: &str, value: &str) -> bool {
        let r = self
            .put(&format!("/v1/kv/{key_and_query}"), value.to_owned())
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.json().as_bool().unwrap()
    }

    /// The one entry at `key`, or `None` on 404.
    async fn kv_get(&self, key: &str) -> Option<Value> {
        let r = self.get(&format!("/v1/kv/{key}")).await;
        match r.status {
            404 => None,
            200 => Some(r.json()[0].clone()),
            s => panic!("GET {key}: {s} {}", r.text),
        }
    }

    async fn txn(&self, ops: Value) -> Reply {
        self.put("/v1/txn", ops.to_string()).await
    }
}

fn b64(s: &str) -> String {
    STANDARD.encode(s)
}

fn value_of(entry: &Value) -> String {
    String::from_utf8(STANDARD.decode(entry["Value"].as_str().unwrap()).unwrap()).unwrap()
}

#[tokio::test]
async fn sessions_are_created_renewed_read_and_destroyed() {
    let consul = ConsulStandIn::start().await.unwrap();
    let c = Client::new(&consul);
    assert_eq!(consul.url(), format!("consul://{}", consul.addr()));
    assert_eq!(consul.addr(), format!("127.0.0.1:{}", consul.port()));

    let before = consul.index();
    let id = c
        .session(json!({"Name": "s1", "TTL": "15s", "Behavior": "delete", "LockDelay": "2s"}))
        .await;
    assert_eq!(id.len(), 36);
    assert!(consul.index() > before);
    assert_eq!(consul.session_count(), 1);

    let info = c.get(&format!("/v1/session/info/{id}")).await;
    assert_eq!(info.status, 200);
    assert!(info.index.unwrap() >= 1);
    assert_eq!(info.header("X-Consul-KnownLeader"), Some("true"));
    assert_eq!(info.header("X-Consul-LastContact"), Some("0"));
    let s = &info.json()[0];
    assert_eq!(s["ID"], id.as_str());
    assert_eq!(s["Name"], "s1");
    assert_eq!(s["TTL"], "15s");
    assert_eq!(s["Behavior"], "delete");
    assert_eq!(s["LockDelay"], 2_000_000_000u64);
    assert_eq!(s["NodeChecks"], json!(["serfHealth"]));
    assert_eq!(s["ServiceChecks"], Value::Null);
    assert_eq!(s["CreateIndex"], s["ModifyIndex"]);
    assert!(s["Node"].is_string());

    let renewed = c.put(&format!("/v1/session/renew/{id}"), "").await;
    assert_eq!(renewed.status, 200);
    assert_eq!(renewed.json()[0]["ID"], id.as_str());

    let list = c.get("/v1/session/list").await;
    assert_eq!(list.json().as_array().unwrap().len(), 1);

    let destroyed = c.put(&format!("/v1/session/destroy/{id}"), "").await;
    assert_eq!((destroyed.status, destroyed.text.as_str()), (200, "true"));
    assert_eq!(consul.session_count(), 0);
    // Gone: info is an empty list, renew a 404 with Consul's text, destroy idempotent.
    let info = c.get(&format!("/v1/session/info/{id}")).await;
    assert_eq!((info.status, info.text.as_str()), (200, "[]"));
    let renewed = c.put(&format!("/v1/session/renew/{id}"), "").await;
    assert_eq!(renewed.status, 404);
    assert_eq!(renewed.text, format!("Session id '{id}' not found"));
    let again = c.put(&format!("/v1/session/destroy/{id}"), "").await;
    assert_eq!((again.status, again.text.as_str()), (200, "true"));

    // Defaults: no body at all is a release session with a 15 s lock-delay.
    let id = c.put("/v1/session/create", "").await.json()["ID"]
        .as_str()
        .unwrap()
        .to_owned();
    let s = &c.get(&format!("/v1/session/info/{id}")).await.json()[0];
    assert_eq!(s["Behavior"], "release");
    assert_eq!(s["LockDelay"], 15_000_000_000u64);
    assert_eq!(s["TTL"], "");
}

#[tokio::test]
async fn session_ttls_and_settings_are_checked_like_consul() {
    let consul = ConsulStandIn::start().await.unwrap();
    let c = Client::new(&consul);
    for (ttl, nanos) in [("5s", 5_000_000_000u64), ("25h", 90_000_000_000_000)] {
        let r = c
            .put("/v1/session/create", json!({"TTL": ttl}).to_string())
            .await;
        assert_eq!(r.status, 500, "{ttl}");
        assert_eq!(
            r.text,
            format!("Invalid Session TTL '{nanos}', must be between [10s=24h0m0s]")
        );
    }
    let r = c
        .put("/v1/session/create", json!({"TTL": "soon"}).to_string())
        .await;
    assert_eq!(r.status, 500);
    assert_eq!(
        r.text,
        "Session TTL 'soon' invalid: time: invalid duration \"soon\""
    );
    let r = c
        .put(
            "/v1/session/create",
            json!({"Behavior": "keep"}).to_string(),
        )
        .await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (500, "Invalid Behavior setting 'keep'")
    );
    let r = c
        .put("/v1/session/create", json!({"Checks": ["web"]}).to_string())
        .await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (500, "Missing check 'web' registration")
    );
    let r = c.put("/v1/session/create", "{not json").await;
    assert_eq!(r.status, 400);
    assert!(r.text.starts_with("Request decode failed: "), "{}", r.text);
    assert_eq!(consul.session_count(), 0);

    // The bounds themselves, and 0, are fine; LockDelay under 1000 means seconds.
    for ttl in ["10s", "24h", "0s", ""] {
        c.session(json!({"TTL": ttl})).await;
    }
    for (delay, nanos) in [
        (json!(5), 5_000_000_000u64),
        (json!("100ms"), 100_000_000),
        (json!(250_000_000), 250_000_000),
        (json!("0s"), 0),
    ] {
        let id = c
            .session(json!({"LockDelay": delay, "NodeChecks": []}))
            .await;
        let s = &c.get(&format!("/v1/session/info/{id}")).await.json()[0];
        assert_eq!(s["LockDelay"], nanos, "{delay}");
        assert_eq!(s["NodeChecks"], json!([]));
    }
}

/// Creates `n` sessions with a `"10s"` TTL (100 ms at scale 0.01), each holding
/// one key (behavior delete), and returns for each how long after `since(i)` a
/// blocking query saw its key deleted.
async fn expiry_delays(
    consul: &ConsulStandIn,
    n: usize,
    renew_for: Duration,
) -> Vec<(Duration, Duration)> {
    let c = Client::new(consul);
    let mut tasks = Vec::new();
    for i in 0..n {
        let c = Client::new(consul);
        let key = format!("ttl/{i}");
        let started = Instant::now();
        let id = c
            .session(json!({"TTL": "10s", "Behavior": "delete", "LockDelay": "0s"}))
            .await;
        let created = Instant::now();
        assert!(c.kv_put(&format!("{key}?acquire={id}"), "held").await);
        tasks.push(tokio::spawn(async move {
            // Keep renewing for `renew_for` (every 40 ms, well inside the 100 ms TTL).
            let mut last = (started, created);
            let renewals = renew_for.as_millis() / 40;
            for _ in 0..renewals {
                tokio::time::sleep(Duration::from_millis(40)).await;
                let before = Instant::now();
                let r = c.put(&format!("/v1/session/renew/{id}"), "").await;
                assert_eq!(r.status, 200, "renewal {}", r.text);
                last = (before, Instant::now());
            }
            // Block on the key until it is deleted (at most 2 s).
            let first = c.get(&format!("/v1/kv/{key}")).await;
            let mut index = first.index.unwrap();
            if first.status == 200 {
                let r = c.get(&format!("/v1/kv/{key}?index={index}&wait=2s")).await;
                assert_eq!(r.status, 404, "still there after the wait");
                index = r.index.unwrap();
            }
            let seen = Instant::now();
            assert!(index > 1);
            // Lower bound from before the last write, upper bound from after it.
            (seen - last.0, seen - last.1)
        }));
    }
    drop(c);
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

#[tokio::test]
async fn ttl_invalidation_comes_between_ttl_and_twice_ttl() {
    let options = StandInOptions::default().with_ttl_scale(0.01);
    let consul = ConsulStandIn::start_with(options).await.unwrap();
    let ttl = Duration::from_millis(100);
    let slack = Duration::from_millis(150);

    // Without renewals, measured from the creation.
    let delays = expiry_delays(&consul, 6, Duration::ZERO).await;
    for &(from_before, from_after) in &delays {
        assert!(from_before >= ttl, "invalidated early: {from_before:?}");
        assert!(
            from_after <= 2 * ttl + slack,
            "invalidated late: {from_after:?}"
        );
    }
    assert_eq!(consul.session_count(), 0);
    // The factor is drawn per session: six draws from [1, 2] all within 5 ms of
    // each other (of a 100 ms span) would be a one-in-millions coincidence.
    let lo = delays.iter().map(|d| d.1).min().unwrap();
    let hi = delays.iter().map(|d| d.1).max().unwrap();
    assert!(hi - lo > Duration::from_millis(5), "no spread: {delays:?}");

    // Renewals keep it alive past several TTLs; then it goes within [TTL, 2×TTL].
    for (from_before, from_after) in expiry_delays(&consul, 2, Duration::from_millis(320)).await {
        assert!(from_before >= ttl, "invalidated early: {from_before:?}");
        assert!(
            from_after <= 2 * ttl + slack,
            "invalidated late: {from_after:?}"
        );
    }
}

#[tokio::test]
async fn behavior_release_keeps_keys_and_delete_removes_them() {
    let consul = ConsulStandIn::start().await.unwrap();
    let c = Client::new(&consul);
    let rel = c
        .session(json!({"Behavior": "release", "LockDelay": "0s"}))
        .await;
    let del = c
        .session(json!({"Behavior": "delete", "LockDelay": "0s"}))
        .await;
    assert!(c.kv_put(&format!("b/rel?acquire={rel}"), "kept").await);
    assert!(c.kv_put(&format!("b/del?acquire={del}"), "gone").await);
    let held = c.kv_get("b/rel").await.unwrap();
    assert_eq!(held["Session"], rel.as_str());
    assert_eq!(held["LockIndex"], 1);

    c.put(&format!("/v1/session/destroy/{rel}"), "").await;
    c.put(&format!("/v1/session/destroy/{del}"), "").await;
    let released = c.kv_get("b/rel").await.unwrap();
    assert!(released.get("Session").is_none(), "{released}");
    assert_eq!(value_of(&released), "kept");
    assert_eq!(released["LockIndex"], 1);
    assert!(released["ModifyIndex"].as_u64() > held["ModifyIndex"].as_u64());
    assert!(c.kv_get("b/del").await.is_none());

    // A new holder counts one more acquisition.
    let other = c.session(json!({})).await;
    assert!(c.kv_put(&format!("b/rel?acquire={other}"), "x").await);
    assert_eq!(c.kv_get("b/rel").await.unwrap()["LockIndex"], 2);
}

#[tokio::test]
async fn acquire_and_release_follow_the_lock_rules() {
    let consul = ConsulStandIn::start().await.unwrap();
    let c = Client::new(&consul);
    let a = c.session(json!({})).await;
    let b = c.session(json!({})).await;
    assert!(c.kv_put(&format!("l?acquire={a}"), "one").await);
    let first = c.kv_get("l").await.unwrap();
    // Again by the holder: still held, LockIndex unchanged, value written.
    assert!(c.kv_put(&format!("l?acquire={a}"), "two").await);
    let again = c.kv_get("l").await.unwrap();
    assert_eq!(again["LockIndex"], first["LockIndex"]);
    assert_eq!(value_of(&again), "two");
    // By someone else: refused, nothing changes.
    assert!(!c.kv_put(&format!("l?acquire={b}"), "three").await);
    assert_eq!(
        c.kv_get("l").await.unwrap()["ModifyIndex"],
        again["ModifyIndex"]
    );
    assert!(!c.kv_put(&format!("l?release={b}"), "").await);
    // An unknown session is Consul's 500.
    let unknown = "00000000-0000-4000-8000-000000000000";
    let r = c.put(&format!("/v1/kv/l?acquire={unknown}"), "").await;
    assert_eq!(r.status, 500);
    assert_eq!(r.text, format!("invalid session \"{unknown}\""));
    // Released by the holder: unlocked, the release's value written.
    assert!(c.kv_put(&format!("l?release={a}"), "free").await);
    let free = c.kv_get("l").await.unwrap();
    assert!(free.get("Session").is_none());
    assert_eq!(value_of(&free), "free");
    // acquire and release together are a 400.
    let r = c
        .put(&format!("/v1/kv/l?acquire={a}&release={a}"), "")
        .await;
    assert_eq!(r.status, 400);
    assert!(r.text.starts_with("Conflicting flags: "), "{}", r.text);
}

#[tokio::test]
async fn lock_delay_follows_invalidation_but_not_release() {
    let consul = ConsulStandIn::start().await.unwrap();
    let c = Client::new(&consul);
    let delay = Duration::from_millis(300);
    let holder = c.session(json!({"LockDelay": "300ms"})).await;
    let waiter = c.session(json!({})).await;

    // A normal release: the waiter gets the key at once.
    assert!(c.kv_put(&format!("d/released?acquire={holder}"), "").await);
    assert!(c.kv_put(&format!("d/released?release={holder}"), "").await);
    assert!(c.kv_put(&format!("d/released?acquire={waiter}"), "").await);

    // An invalidation: refused for the lock-delay, then granted.
    assert!(c.kv_put(&format!("d/k?acquire={holder}"), "").await);
    let before = Instant::now();
    c.put(&format!("/v1/session/destroy/{holder}"), "").await;
    let after = Instant::now();
    assert!(!c.kv_put(&format!("d/k?acquire={waiter}"), "").await);
    let r = c
        .txn(json!([{"KV": {"Verb": "lock", "Key": "d/k", "Session": waiter}}]))
        .await;
    assert_eq!(r.status, 409);
    assert_eq!(
        r.json()["Errors"][0]["What"],
        "failed to lock key \"d/k\" due to lock delay"
    );
    // Poll every 20 ms (at most 2 s) for the grant.
    let mut granted = None;
    for _ in 0..100 {
        if c.kv_put(&format!("d/k?acquire={waiter}"), "").await {
            granted = Some(Instant::now());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let granted = granted.expect("never granted after the lock-delay");
    assert!(
        granted - before >= delay,
        "granted early: {:?}",
        granted - before
    );
    assert!(
        granted - after <= delay + Duration::from_millis(150),
        "granted late: {:?}",
        granted - after
    );
}

#[tokio::test]
async fn cas_writes_and_deletes_only_at_the_given_index() {
    let consul = ConsulStandIn::start().await.unwrap();
    let c = Client::new(&consul);
    assert!(c.kv_put("c?cas=0", "v1").await, "cas=0 creates");
    assert!(!c.kv_put("c?cas=0", "v2").await, "cas=0 only creates");
    let m = c.kv_get("c").await.unwrap()["ModifyIndex"]
        .as_u64()
        .unwrap();
    assert!(!c.kv_put(&format!("c?cas={}", m + 100), "v2").await);
    assert!(c.kv_put(&format!("c?cas={m}&flags=7"), "v2").await);
    let e = c.kv_get("c").await.unwrap();
    assert_eq!(
        (value_of(&e), e["Flags"].as_u64()),
        ("v2".to_owned(), Some(7))
    );
    let m2 = e["ModifyIndex"].as_u64().unwrap();
    assert!(m2 > m);
    assert_eq!(e["CreateIndex"].as_u64(), Some(m));

    let r = c.delete(&format!("/v1/kv/c?cas={m}")).await;
    assert_eq!(r.text, "false");
    let r = c.delete(&format!("/v1/kv/c?cas={m2}")).await;
    assert_eq!(r.text, "true");
    assert!(c.kv_get("c").await.is_none());
    // As in Consul, a CAS delete of a missing key reports true.
    assert_eq!(c.delete("/v1/kv/c?cas=5").await.text, "true");
    // A bad number is what Go's strconv says, as a 500.
    let r = c.put("/v1/kv/c?cas=x", "").await;
    assert_eq!(r.status, 500);
    assert_eq!(r.text, "strconv.ParseUint: parsing \"x\": invalid syntax");
    // Recursive delete.
    for k in ["t/a", "t/b/c", "u"] {
        assert!(c.kv_put(k, "x").await);
    }
    let listed = c.get("/v1/kv/t/?recurse").await.json();
    assert_eq!(listed.as_array().unwrap().len(), 2);
    assert_eq!(
        c.get("/v1/kv/?keys&separator=/").await.json(),
        json!(["t/", "u"])
    );
    assert_eq!(c.delete("/v1/kv/t/?recurse").await.text, "true");
    assert_eq!(c.get("/v1/kv/t/?recurse").await.status, 404);
    assert!(c.kv_get("u").await.is_some());
}

#[tokio::test]
async fn transactions_apply_all_or_nothing_with_consuls_shapes() {
    let consul = ConsulStandIn::start().await.unwrap();
    let c = Client::new(&consul);
    let s = c.session(json!({})).await;
    assert!(c.kv_put("x/old", "old").await);

    // Two failures among good writes: both reported, nothing applied.
    let before = consul.index();
    let r = c
        .txn(json!([
            {"KV": {"Verb": "set", "Key": "x/a", "Value": b64("a")}},
            {"KV": {"Verb": "cas", "Key": "x/b", "Value": b64("b"), "Index": 999}},
            {"KV": {"Verb": "delete", "Key": "x/old"}},
            {"KV": {"Verb": "get", "Key": "x/missing"}},
        ]))
        .await;
    assert_eq!(r.status, 409);
    let body = r.json();
    assert_eq!(body["Results"], Value::Null);
    assert_eq!(
        body["Errors"],
        json!([
            {"OpIndex": 1, "What": "failed to set key \"x/b\", index is stale"},
            {"OpIndex": 3, "What": "key \"x/missing\" doesn't exist"},
        ])
    );
    assert!(c.kv_get("x/a").await.is_none());
    assert!(c.kv_get("x/old").await.is_some());
    assert!(
        consul.index() > before,
        "a write transaction takes an index"
    );

    // Success: results for set, lock, get, check-session; none for deletes.
    let r = c
        .txn(json!([
            {"KV": {"Verb": "set", "Key": "x/a", "Value": b64("a"), "Flags": 3}},
            {"KV": {"Verb": "lock", "Key": "x/l", "Value": b64("me"), "Session": s}},
            {"KV": {"Verb": "get", "Key": "x/a"}},
            {"KV": {"Verb": "check-session", "Key": "x/l", "Session": s}},
            {"KV": {"Verb": "delete", "Key": "x/old"}},
            {"KV": {"Verb": "check-not-exists", "Key": "x/old"}},
        ]))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let body = r.json();
    assert_eq!(body["Errors"], Value::Null);
    let results = body["Results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    let set = &results[0]["KV"];
    assert_eq!(
        (set["Key"].as_str(), set["Flags"].as_u64()),
        (Some("x/a"), Some(3))
    );
    assert_eq!(set["Value"], Value::Null, "write results carry no value");
    let lock = &results[1]["KV"];
    assert_eq!(
        (lock["Session"].as_str(), lock["LockIndex"].as_u64()),
        (Some(s.as_str()), Some(1))
    );
    assert_eq!(
        lock["ModifyIndex"], set["ModifyIndex"],
        "one index per transaction"
    );
    assert_eq!(value_of(&results[2]["KV"]), "a");
    assert_eq!(results[3]["KV"]["Key"], "x/l");
    assert!(c.kv_get("x/old").await.is_none());

    // A read-only transaction takes no index and says so in its headers.
    let before = consul.index();
    let r = c.txn(json!([{"KV": {"Verb": "get", "Key": "x/a"}}])).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("X-Consul-KnownLeader"), Some("true"));
    assert_eq!(consul.index(), before);

    // Too many operations; bad bodies.
    let ops: Vec<Value> = (0..129)
        .map(|i| json!({"KV": {"Verb": "set", "Key": format!("m/{i}")}}))
        .collect();
    let r = c.txn(Value::Array(ops)).await;
    assert_eq!(r.status, 413);
    assert_eq!(
        r.text,
        "Transaction contains too many operations (129 > 128)"
    );
    let r = c.put("/v1/txn", "{").await;
    assert_eq!(r.status, 400);
    assert!(r.text.starts_with("Failed to parse body: "), "{}", r.text);
    let r = c.txn(json!([{"KV": {"Verb": "frob", "Key": "k"}}])).await;
    assert_eq!(r.json()["Errors"][0]["What"], "unknown KV verb \"frob\"");
}

#[tokio::test]
async fn blocking_queries_return_on_change_on_delete_and_at_the_wait() {
    let consul = ConsulStandIn::start().await.unwrap();
    let c = Client::new(&consul);
    assert!(c.kv_put("w", "1").await);
    let index = c.get("/v1/kv/w").await.index.unwrap();

    // Nothing changes: back after the wait (plus at most wait/16 of jitter).
    let wait = Duration::from_millis(300);
    let start = Instant::now();
    let r = c.get(&format!("/v1/kv/w?index={index}&wait=300ms")).await;
    let took = start.elapsed();
    assert_eq!((r.status, r.index), (200, Some(index)));
    assert!(took >= wait, "returned early: {took:?}");
    assert!(
        took <= wait + wait / 16 + Duration::from_millis(150),
        "late: {took:?}"
    );

    // index=0, or an index already passed: at once.
    let start = Instant::now();
    assert_eq!(c.get("/v1/kv/w?index=0&wait=5s").await.status, 200);
    assert_eq!(
        c.get(&format!("/v1/kv/w?index={}&wait=5s", index - 1))
            .await
            .status,
        200
    );
    assert!(start.elapsed() < Duration::from_secs(1));

    // A change: back promptly after the write, with the new index.
    for change in ["put", "delete"] {
        let index = c.get("/v1/kv/w").await.index.unwrap();
        let reads = consul.requests("GET", "/v1/kv/");
        let blocked = {
            let c = Client::new(&consul);
            tokio::spawn(async move {
                let r = c.get(&format!("/v1/kv/w?index={index}&wait=5s")).await;
                (r, Instant::now())
            })
        };
        // Write only once the stand-in has the blocking read (it waits from there).
        wait_until("the blocking read to arrive", || {
            consul.requests("GET", "/v1/kv/") > reads
        })
        .await;
        let written = Instant::now();
        if change == "put" {
            assert!(c.kv_put("w", "2").await);
        } else {
            assert_eq!(c.delete("/v1/kv/w").await.text, "true");
        }
        let (r, returned) = blocked.await.unwrap();
        assert!(r.index.unwrap() > index, "{change}: index did not move");
        assert_eq!(r.status, if change == "put" { 200 } else { 404 });
        let lag = returned.saturating_duration_since(written);
        assert!(lag < Duration::from_millis(150), "{change}: took {lag:?}");
    }

    // A deleted key's index stays at its deletion (tombstone), never below.
    let after_delete = c.get("/v1/kv/w").await.index.unwrap();
    assert!(c.kv_put("other", "x").await);
    assert!(c.get("/v1/kv/w").await.index.unwrap() >= after_delete);
    // Bad parameters.
    assert_eq!(c.get("/v1/kv/w?wait=soon").await.text, "Invalid wait time");
    assert_eq!(c.get("/v1/kv/w?index=x").await.text, "Invalid index");
}

#[tokio::test]
async fn indexes_strictly_increase_and_reads_report_the_keys_index() {
    let consul = ConsulStandIn::start().await.unwrap();
    let c = Client::new(&consul);
    let mut seen = vec![consul.index()];
    let s = c.session(json!({"LockDelay": "0s"})).await;
    seen.push(consul.index());
    assert!(c.kv_put("i/a", "1").await);
    seen.push(consul.index());
    assert!(c.kv_put("i/a", "1").await, "an unchanged write");
    seen.push(consul.index());
    assert!(c.kv_put(&format!("i/b?acquire={s}"), "").await);
    seen.push(consul.index());
    c.txn(json!([{"KV": {"Verb": "set", "Key": "i/c", "Value": b64("c")}}]))
        .await;
    seen.push(consul.index());
    c.delete("/v1/kv/i/a").await;
    seen.push(consul.index());
    c.put(&format!("/v1/session/destroy/{s}"), "").await;
    seen.push(consul.index());
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");

    // A read reports the key's ModifyIndex, which an unchanged write keeps.
    assert!(c.kv_put("i/d", "same").await);
    let r = c.get("/v1/kv/i/d").await;
    assert_eq!(r.index, r.json()[0]["ModifyIndex"].as_u64());
    assert!(c.kv_put("i/d", "same").await);
    assert_eq!(c.get("/v1/kv/i/d").await.index, r.index);
    // A missing key reports at least 1 and never goes back.
    assert!(c.get("/v1/kv/never").await.index.unwrap() >= 1);
}

#[tokio::test]
async fn an_acl_token_is_required_when_configured() {
    let options = StandInOptions::default().with_acl_token("s3cret");
    let consul = ConsulStandIn::start_with(options).await.unwrap();
    let anonymous = Client::new(&consul);
    let wrong = Client::with_token(&consul, "guess");
    let good = Client::with_token(&consul, "s3cret");

    let r = anonymous.put("/v1/kv/k", "v").await;
    assert_eq!(r.status, 403);
    assert!(
        r.text.starts_with(
            "Permission denied: anonymous token lacks permission 'key:write' on \"k\""
        ),
        "{}",
        r.text
    );
    let r = wrong.put("/v1/kv/k", "v").await;
    assert_eq!((r.status, r.text.as_str()), (403, "ACL not found"));
    assert_eq!(anonymous.put("/v1/session/create", "").await.status, 403);

    assert!(good.kv_put("k", "v").await);
    assert_eq!(anonymous.get("/v1/kv/k?token=s3cret").await.status, 200);
    let bearer = http_client()
        .get(format!("http://{}/v1/kv/k", consul.addr()))
        .bearer_auth("s3cret")
        .send()
        .await
        .unwrap();
    assert_eq!(bearer.status().as_u16(), 200);
    // Reads the anonymous token may not make are filtered, not refused.
    let id = good.session(json!({})).await;
    let r = anonymous.get(&format!("/v1/session/info/{id}")).await;
    assert_eq!((r.status, r.text.as_str()), (200, "[]"));
    let r = anonymous
        .txn(json!([{"KV": {"Verb": "set", "Key": "k", "Value": b64("x")}}]))
        .await;
    assert_eq!(r.status, 409);
    assert!(
        r.json()["Errors"][0]["What"]
            .as_str()
            .unwrap()
            .starts_with("Permission denied")
    );
    assert_eq!(value_of(&good.kv_get("k").await.unwrap()), "v");
    // The status endpoints need no token.
    let r = anonymous.get("/v1/status/leader").await;
    assert_eq!((r.status, r.json()), (200, json!("127.0.0.1:8300")));
}

#[tokio::test]
async fn errors_look_like_consuls() {
    let consul = ConsulStandIn::start().await.unwrap();
    let c = Client::new(&consul);
    let r = c.get("/v1/nothing/here").await;
    assert_eq!((r.status, r.text.as_str()), (404, ""));
    let r = c.send(Method::POST, "/v1/kv/k", "").await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (405, "method POST not allowed")
    );
    assert_eq!(r.header("Allow"), Some("OPTIONS,GET,PUT,DELETE"));
    let r = c.get("/v1/session/create").await;
    assert_eq!(r.status, 405);
    let r = c.put("/v1/kv/", "").await;
    assert_eq!((r.status, r.text.as_str()), (400, "Missing key name"));
    let r = c.get("/v1/kv/k?dc=elsewhere").await;
    assert_eq!((r.status, r.text.as_str()), (500, "No path to datacenter"));
    let r = c.get("/v1/kv/k?stale&consistent").await;
    assert_eq!(r.status, 400);
    assert_eq!(r.header("Content-Type"), Some("text/plain; charset=utf-8"));
    // Keys are percent-decoded; `//` is redirected like Go's ServeMux does.
    assert!(c.kv_put("a%2Fb", "x").await);
    assert!(c.kv_get("a/b").await.is_some());
    let r = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(format!("http://{}/v1/kv/a//b", consul.addr()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 301);
    let r = c.get("/v1/kv/a/b?raw").await;
    assert_eq!((r.status, r.text.as_str()), (200, "x"));
}

#[tokio::test]
async fn pause_holds_replies_until_resume_and_drop_closes() {
    let consul = ConsulStandIn::start().await.unwrap();
    let c = Client::new(&consul);
    assert_eq!(c.get("/v1/status/leader").await.status, 200);

    consul.pause();
    let held = {
        let c = Client::new(&consul);
        tokio::spawn(async move { c.get("/v1/status/leader").await.status })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!held.is_finished(), "answered while paused");
    consul.resume();
    let status = tokio::time::timeout(Duration::from_secs(2), held)
        .await
        .expect("not answered after resume")
        .unwrap();
    assert_eq!(status, 200);

    let url = format!("http://{}/v1/status/leader", consul.addr());
    drop(consul);
    let after = http_client()
        .get(url)
        .timeout(Duration::from_secs(2))
        .send()
        .await;
    assert!(after.is_err(), "answered after drop");
}

/// While its servers have no leader, Consul answers what needs them `500 No
/// cluster leader` and writes nothing, and `/v1/status/leader` is `""`; once a
/// leader is elected it serves again.
#[tokio::test]
async fn without_a_leader_requests_are_refused_and_nothing_is_written() {
    let consul = ConsulStandIn::start().await.unwrap();
    let c = Client::new(&consul);
    consul.lose_leader();
    let put = c.put("/v1/kv/election/k", "v").await;
    assert_eq!((put.status, put.text.as_str()), (500, "No cluster leader"));
    assert_eq!(c.get("/v1/kv/election/k").await.status, 500);
    assert_eq!(c.get("/v1/status/leader").await.json(), json!(""));
    assert_eq!(consul.requests("PUT", "/v1/kv/"), 1, "refusals are counted");

    consul.elect_leader();
    assert_eq!(
        c.get("/v1/kv/election/k").await.status,
        404,
        "the refused write was not made"
    );
    assert_eq!(c.put("/v1/kv/election/k", "v").await.status, 200);
    assert_eq!(c.get("/v1/kv/election/k").await.status, 200);
}

/// Polls `done` every 5 ms for at most 5 s.
async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A reqwest client. Built with every workspace feature, reqwest has rustls
/// without a crypto provider (lockkit-consul brings ring): install ring first.
fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}
