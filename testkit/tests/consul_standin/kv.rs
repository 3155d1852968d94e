//! The KV store beyond locks: transactions, blocking queries, indexes.

use std::time::{Duration, Instant};

use lockkit_testkit::ConsulStandIn;
use serde_json::{Value, json};

use super::client::{Client, b64, value_of, wait_until};

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
