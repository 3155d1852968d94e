//! lockkit beside Consul's own `api.Lock` (Go's client, and `consul lock`) on one
//! key, against the testkit's stand-in (no Consul agent or Go toolchain can be
//! installed here). `GoApiLock` below follows `api/lock.go` step by step,
//! including its flag check: a contender that finds the key with flags other than
//! `LockFlagValue` fails with `ErrLockConflict` instead of waiting.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lockkit::{LockError, Locker};
use lockkit_testkit::ConsulStandIn;
use serde_json::{Value, json};

/// `api.LockFlagValue`.
const LOCK_FLAG_VALUE: u64 = 0x2ddc_cbc0_58a5_0c18;
const WITHIN: Duration = Duration::from_secs(15);

/// A port of Go's `api.Lock` (`api/lock.go`): a session of its own (TTL 15 s),
/// then: read the key, blocking while another session holds it; fail on foreign
/// flags; acquire with `LockFlagValue`; retry after 5 s if that failed.
struct GoApiLock {
    http: reqwest::Client,
    base: String,
    key: String,
    session: String,
    /// Blocking reads sent: the contender is waiting for a holder.
    waits: AtomicUsize,
}

impl GoApiLock {
    async fn new(consul: &ConsulStandIn, key: &str) -> Self {
        let (http, base) = (reqwest::Client::new(), format!("http://{}", consul.addr()));
        let created: Value = http
            .put(format!("{base}/v1/session/create"))
            .json(&json!({"Name": "Consul API Lock", "TTL": "15s"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let session = created["ID"].as_str().unwrap().to_owned();
        let key = key.to_owned();
        let waits = AtomicUsize::new(0);
        Self {
            http,
            base,
            key,
            session,
            waits,
        }
    }

    /// The key's entry and the index to block from.
    async fn get(&self, index: u64) -> (Option<Value>, u64) {
        let url = format!("{}/v1/kv/{}", self.base, self.key);
        let reply = self
            .http
            .get(url)
            .query(&[("index", index.to_string()), ("wait", "15s".into())])
            .send()
            .await
            .unwrap();
        let last = reply.headers()["X-Consul-Index"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        if reply.status() == reqwest::StatusCode::NOT_FOUND {
            return (None, last);
        }
        let entries: Vec<Value> = reply.json().await.unwrap();
        (entries.into_iter().next(), last)
    }

    /// `Lock`: Ok once held; `Err("Existing key does not match lock use")` when
    /// the key carries other flags.
    async fn lock(&self) -> Result<(), &'static str> {
        let mut index = 0;
        for _ in 0..100 {
            if index > 0 {
                self.waits.fetch_add(1, Ordering::SeqCst);
            }
            let (pair, last) = self.get(index).await;
            if let Some(pair) = &pair {
                if pair["Flags"].as_u64() != Some(LOCK_FLAG_VALUE) {
                    return Err("Existing key does not match lock use");
                }
                if pair["Session"].as_str().is_some_and(|s| !s.is_empty()) {
                    index = last;
                    continue;
                }
            }
            if self.put("acquire").await {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_secs(5)).await; // DefaultLockRetryTime
        }
        panic!("api.Lock port: gave up after 100 rounds");
    }

    /// `Unlock`: releases (the key stays, without a session).
    async fn unlock(&self) {
        assert!(self.put("release").await, "api.Lock port: release refused");
    }

    /// `PUT ?acquire=` or `?release=` with our session and `LockFlagValue`.
    async fn put(&self, verb: &str) -> bool {
        let url = format!("{}/v1/kv/{}", self.base, self.key);
        let reply: Value = self
            .http
            .put(url)
            .query(&[
                (verb, self.session.clone()),
                ("flags", LOCK_FLAG_VALUE.to_string()),
            ])
            .body("go-service-7")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        reply.as_bool().unwrap()
    }
}

/// The flags on the KV entry `key`.
async fn flags_of(consul: &ConsulStandIn, key: &str) -> u64 {
    let url = format!("http://{}/v1/kv/{key}", consul.addr());
    let entries: Vec<Value> = reqwest::get(url).await.unwrap().json().await.unwrap();
    entries[0]["Flags"].as_u64().unwrap()
}

/// lockkit holds: a Go `api.Lock` contender on the same key waits (it does not
/// fail with `ErrLockConflict`) and holds once lockkit releases. Then Go holds:
/// lockkit's try is refused, and its waiter is granted after Go's unlock (which
/// leaves the key, without a session), with a greater token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_lock_waits_for_lockkit_and_lockkit_for_api_lock() {
    let consul = ConsulStandIn::start().await.unwrap();
    let lockkit: Locker = lockkit::connect(&format!("{}?lock_delay_ms=0", consul.url()))
        .await
        .unwrap();
    let held = lockkit.try_lock("orders").await.unwrap();
    assert_eq!(flags_of(&consul, "lockkit/orders").await, LOCK_FLAG_VALUE);

    let go = Arc::new(GoApiLock::new(&consul, "lockkit/orders").await);
    let contending = {
        let go = Arc::clone(&go);
        tokio::spawn(async move { go.lock().await })
    };
    let until = tokio::time::Instant::now() + WITHIN;
    while go.waits.load(Ordering::SeqCst) == 0 {
        assert!(!contending.is_finished(), "{:?}", contending.await);
        assert!(tokio::time::Instant::now() < until, "api.Lock never waited");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let ours = held.token();
    held.release().await.unwrap();
    tokio::time::timeout(WITHIN, contending)
        .await
        .expect("api.Lock did not hold within 15 s of lockkit's release")
        .unwrap()
        .expect("api.Lock failed instead of waiting");

    match lockkit.try_lock("orders").await {
        Err(LockError::Contended { .. }) => {}
        other => panic!("lockkit granted while api.Lock held: {other:?}"),
    }
    let value = lockkit.inspect("orders").await.unwrap();
    assert_eq!(value.holders.len(), 1, "{value:?}");
    let waiter = {
        let lockkit = lockkit.clone();
        tokio::spawn(async move { lockkit.lock("orders").wait(WITHIN).await })
    };
    go.unlock().await;
    let guard = waiter
        .await
        .unwrap()
        .expect("not granted after api.Lock's unlock");
    assert!(guard.token() > ours, "{:?} after {ours:?}", guard.token());
    guard.release().await.unwrap();
}
