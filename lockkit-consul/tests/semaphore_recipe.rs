#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

//! Semaphores on the Consul stand-in, beyond the conformance suite: the keys are
//! laid out as Consul's own `api/semaphore.go` lays them out (and a holder written
//! the way that client writes one is counted), a release wakes the waiter it lets
//! in rather than the queue, one driver holds several permits of one semaphore,
//! and a lock and a semaphore of one name exclude each other (and `consul lock`
//! holding the record key as a plain lock excludes both).

use std::sync::Arc;
use std::time::Duration;

use lockkit_conformance::{QueuedSemaphore, until};
use lockkit_consul::{ConsulDriver, ConsulOptions};
use lockkit_core::{LockError, Locker};
use lockkit_testkit::ConsulStandIn;
use serde_json::{Value, json};

/// The flags Consul's Go client puts on a semaphore's keys.
const SEMAPHORE_FLAGS: u64 = 0xe0f6_9a2b_aa41_4de0;
const WAIT: Duration = Duration::from_secs(30);

async fn locker(consul: &ConsulStandIn) -> Locker {
    let url = format!("{}?session_ttl_ms=10000&lock_delay_ms=0", consul.url());
    Locker::new(Arc::new(
        ConsulDriver::connect(ConsulOptions::from_url(&url).unwrap())
            .await
            .unwrap(),
    ))
}

/// Every key under `prefix`, as the agent returns them.
async fn entries(consul: &ConsulStandIn, prefix: &str) -> Vec<Value> {
    let url = format!("http://{}/v1/kv/{prefix}?recurse", consul.addr());
    let reply = reqwest::get(url).await.unwrap();
    if reply.status() == reqwest::StatusCode::NOT_FOUND {
        return Vec::new();
    }
    reply.json::<Vec<Value>>().await.unwrap()
}

fn decoded(entry: &Value) -> Value {
    use base64::Engine;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(entry["Value"].as_str().unwrap())
        .unwrap();
    serde_json::from_slice(&raw).unwrap()
}

/// A PUT to the agent's HTTP API, returning the JSON answer.
async fn put(consul: &ConsulStandIn, path: &str, body: Value) -> Value {
    let url = format!("http://{}{path}", consul.addr());
    let client = reqwest::Client::new();
    client
        .put(url)
        .body(body.to_string())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_semaphore_is_laid_out_as_consuls_recipe_and_counts_its_holders() {
    let consul = ConsulStandIn::start().await.unwrap();
    let (a, b) = (locker(&consul).await, locker(&consul).await);
    let first = a.semaphore("pool", 2).try_acquire().await.unwrap();

    // `<prefix>/<name>/.lock` holds {"Limit":2,"Holders":{<session>:true}}, and the
    // holder's contender key `<prefix>/<name>/<session>` is locked by that session.
    let keys = entries(&consul, "lockkit/pool/").await;
    let record = keys
        .iter()
        .find(|e| e["Key"] == "lockkit/pool/.lock")
        .unwrap();
    assert_eq!(record["Flags"], json!(SEMAPHORE_FLAGS));
    let value = decoded(record);
    assert_eq!(value["Limit"], 2);
    let holders: Vec<&String> = value["Holders"].as_object().unwrap().keys().collect();
    assert_eq!(holders.len(), 1);
    let contender = keys
        .iter()
        .find(|e| e["Key"] == format!("lockkit/pool/{}", holders[0]))
        .unwrap();
    assert_eq!(contender["Session"], json!(holders[0]));
    assert_eq!(contender["Flags"], json!(SEMAPHORE_FLAGS));
    assert_eq!(contender["ModifyIndex"], json!(first.token().get()));

    // A holder added the way Consul's Go client adds one (its own session,
    // behavior `delete`, its contender key acquired, the record rewritten by
    // check-and-set) takes the second slot.
    let spec = json!({"TTL": "10s", "Behavior": "delete"});
    let session = put(&consul, "/v1/session/create", spec).await["ID"]
        .as_str()
        .unwrap()
        .to_owned();
    let acquired = put(
        &consul,
        &format!("/v1/kv/lockkit/pool/{session}?acquire={session}&flags={SEMAPHORE_FLAGS}"),
        json!("go-client"),
    )
    .await;
    assert_eq!(acquired, json!(true));
    let mut with_go = value.clone();
    with_go["Holders"][&session] = json!(true);
    let index = record["ModifyIndex"].as_u64().unwrap();
    let swapped = put(
        &consul,
        &format!("/v1/kv/lockkit/pool/.lock?cas={index}&flags={SEMAPHORE_FLAGS}"),
        with_go,
    )
    .await;
    assert_eq!(swapped, json!(true));
    assert!(matches!(
        b.semaphore("pool", 2).try_acquire().await,
        Err(LockError::Contended { .. })
    ));
    assert!(matches!(
        b.semaphore("pool", 3).try_acquire().await,
        Err(LockError::Config(_))
    ));

    // Its session invalidated, its contender key goes (behavior `delete`) and its
    // slot with it, though the record still lists it: the next writer prunes it.
    put(
        &consul,
        &format!("/v1/session/destroy/{session}"),
        json!(null),
    )
    .await;
    let second = b.semaphore("pool", 2).try_acquire().await.unwrap();
    assert!(second.token() > first.token());
    let seen = a.inspect("pool").await.unwrap();
    assert_eq!(seen.holders.len(), 2);
    second.release().await.unwrap();
    first.release().await.unwrap();
    // The last release leaves nothing behind.
    assert!(entries(&consul, "lockkit/pool/").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_release_wakes_one_waiter_not_the_queue() {
    const LIMIT: u32 = 4;
    const WAITERS: usize = 16;
    let consul = ConsulStandIn::start().await.unwrap();
    let (mut holders, mut waiters) = (Vec::new(), Vec::new());
    for _ in 0..LIMIT {
        holders.push(locker(&consul).await);
    }
    for _ in 0..WAITERS {
        waiters.push(locker(&consul).await);
    }
    let observer = locker(&consul).await;
    let queued = QueuedSemaphore::queue("pool", LIMIT, holders, waiters, &observer, WAIT)
        .await
        .unwrap();
    let requests = || consul.requests("GET", "/v1/kv/") + consul.requests("PUT", "/v1/txn");
    let before = requests();
    let released = queued.drain().await.unwrap();
    let per_release = (requests() - before) as f64 / f64::from(released);
    eprintln!("{per_release:.1} KV requests per release ({WAITERS} waiters, {LIMIT} permits)");
    // The release (a read and a transaction), the first waiter's wake-up, read and
    // transaction, and the next waiter's wake-up, read and new blocking query:
    // about 8. Every waiter blocking on the prefix would take 16 wake-ups and 16
    // reads for each release at first.
    assert!(
        per_release < 12.0,
        "{per_release:.1} KV requests per release with {WAITERS} waiters"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_driver_holds_several_permits_of_one_semaphore_with_spare_sessions() {
    let consul = ConsulStandIn::start().await.unwrap();
    let locker = locker(&consul).await;
    let pool = locker.semaphore("exports", 2);
    let a = pool.try_acquire().await.unwrap();
    let b = pool.try_acquire().await.unwrap();
    assert!(b.token() > a.token());
    assert!(matches!(
        pool.try_acquire().await,
        Err(LockError::Contended { .. })
    ));
    assert_eq!(
        consul.session_count(),
        2,
        "the driver's session and a spare"
    );
    b.release().await.unwrap();
    // The spare no permit uses is destroyed (in the background).
    until("the spare session goes", WAIT, || async {
        consul.session_count() == 1
    })
    .await
    .unwrap();
    a.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_and_a_semaphore_of_one_name_exclude_each_other() {
    let consul = ConsulStandIn::start().await.unwrap();
    let (a, b) = (locker(&consul).await, locker(&consul).await);
    let lock = a.try_lock("shared-name").await.unwrap();
    assert!(matches!(
        b.semaphore("shared-name", 3).try_acquire().await,
        Err(LockError::Contended { .. })
    ));
    let waiting = tokio::spawn(async move {
        let permit = b
            .semaphore("shared-name", 3)
            .acquire()
            .wait(WAIT)
            .await
            .unwrap();
        (b, permit)
    });
    let lock_token = lock.token();
    lock.release().await.unwrap();
    let (b, permit) = waiting.await.unwrap();
    assert!(permit.token() > lock_token);
    assert!(matches!(
        a.try_lock("shared-name").await,
        Err(LockError::Contended { .. })
    ));
    let permit_token = permit.token();
    let waiting = tokio::spawn(async move { a.lock("shared-name").wait(WAIT).await.unwrap() });
    permit.release().await.unwrap();
    let lock = waiting.await.unwrap();
    assert!(lock.token() > permit_token);
    lock.release().await.unwrap();
    drop(b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consul_lock_without_n_holding_the_record_key_excludes_locks_and_permits() {
    let consul = ConsulStandIn::start().await.unwrap();
    let locker = locker(&consul).await;
    // `consul lock lockkit/job` takes `lockkit/job/.lock` as a plain lock.
    let spec = json!({"TTL": "10s", "Behavior": "delete"});
    let session = put(&consul, "/v1/session/create", spec).await["ID"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/v1/kv/lockkit/job/.lock?acquire={session}");
    assert_eq!(put(&consul, &path, json!(null)).await, json!(true));
    assert!(matches!(
        locker.try_lock("job").await,
        Err(LockError::Contended { .. })
    ));
    assert!(matches!(
        locker.semaphore("job", 2).try_acquire().await,
        Err(LockError::Contended { .. })
    ));
    assert_eq!(locker.inspect("job").await.unwrap().holders.len(), 1);
    // Its session ends: the name is free for either.
    put(
        &consul,
        &format!("/v1/session/destroy/{session}"),
        json!(null),
    )
    .await;
    let permit = locker.semaphore("job", 2).try_acquire().await.unwrap();
    permit.release().await.unwrap();
    locker
        .try_lock("job")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}
