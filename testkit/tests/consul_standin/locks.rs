//! Locks on keys: acquire and release, lock-delay, check-and-set.

use std::time::{Duration, Instant};

use lockkit_testkit::ConsulStandIn;
use serde_json::json;

use super::client::{Client, value_of};

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
