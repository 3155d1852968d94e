//! Sessions: create, renew, read, destroy; their settings; TTL invalidation and
//! its timing; the release and delete behaviors.

use std::time::{Duration, Instant};

use lockkit_testkit::{ConsulStandIn, StandInOptions};
use serde_json::{Value, json};

use super::client::{Client, value_of};

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
