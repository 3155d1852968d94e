//! `key=raw` in the session modes against the real foreign clients: `psql` taking
//! `pg_advisory_lock(42)` and the `mariadb` client taking `GET_LOCK('orders', …)`
//! hold the very locks lockkit names `42` and `orders`, in both directions.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit::{LockError, Locker};
use lockkit_testkit::{ForeignClient, MariaDb, Postgres};

const WITHIN: Duration = Duration::from_secs(15);

/// What a foreign client says to take, try, wait for and give back one lock, and
/// how the test sees that it waits.
struct Foreign {
    client: ForeignClient,
    /// Blocks until held, then prints `taken`.
    take: &'static str,
    /// Prints the result of a try without waiting, then `tried`.
    try_take: &'static str,
    /// What the try prints when refused, before `tried`.
    refused: &'static str,
    /// Gives the lock back, then prints `given`.
    give: &'static str,
}

/// The foreign client holds: lockkit's try is refused, and a lockkit waiter is
/// granted once it gives the lock back. Then lockkit holds: the client's try is
/// refused, its blocking take waits (`waiting` tells when the server shows it
/// waiting), and it is granted once lockkit releases.
async fn foreign_and_lockkit_exclude_each_other<W, F>(
    mut foreign: Foreign,
    lockkit: &Locker,
    key: &str,
    waiting: W,
) where
    W: Fn() -> F,
    F: std::future::Future<Output = bool>,
{
    foreign.client.send(foreign.take).await.unwrap();
    foreign
        .client
        .line_containing("taken", WITHIN)
        .await
        .unwrap();
    match lockkit.try_lock(key).await {
        Err(LockError::Contended { .. }) => {}
        other => panic!("lockkit granted `{key}` while the foreign client held it: {other:?}"),
    }
    let waiter = {
        let lockkit = lockkit.clone();
        let key = key.to_owned();
        tokio::spawn(async move { lockkit.lock(key).wait(WITHIN).await })
    };
    assert!(
        !waiter.is_finished(),
        "granted while the foreign client held"
    );
    foreign.client.send(foreign.give).await.unwrap();
    foreign
        .client
        .line_containing("given", WITHIN)
        .await
        .unwrap();
    let guard = waiter
        .await
        .unwrap()
        .expect("not granted after the foreign release");

    foreign.client.send(foreign.try_take).await.unwrap();
    let tried = foreign
        .client
        .line_containing("tried", WITHIN)
        .await
        .unwrap();
    assert!(
        tried.starts_with(foreign.refused),
        "the foreign client's try while lockkit held: {tried}"
    );
    foreign.client.send(foreign.take).await.unwrap();
    let until = tokio::time::Instant::now() + WITHIN;
    while !waiting().await {
        assert!(
            tokio::time::Instant::now() < until,
            "the server never showed the foreign client waiting"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    guard.release().await.unwrap();
    foreign
        .client
        .line_containing("taken", WITHIN)
        .await
        .unwrap();
    match lockkit.try_lock(key).await {
        Err(LockError::Contended { .. }) => {}
        other => panic!("lockkit granted `{key}` while the foreign client held it: {other:?}"),
    }
    foreign.client.send(foreign.give).await.unwrap();
    foreign
        .client
        .line_containing("given", WITHIN)
        .await
        .unwrap();
    assert!(foreign.client.finish(WITHIN).await.unwrap().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_advisory_locks_and_lockkit_raw_keys_exclude_each_other() {
    let pg = Postgres::start().await.unwrap();
    let lockkit: Locker = lockkit::connect(&format!("{}?mode=advisory&key=raw", pg.url()))
        .await
        .unwrap();
    let client = ForeignClient::spawn("psql", pg.psql().unwrap()).unwrap();
    let foreign = Foreign {
        client,
        take: "SELECT pg_advisory_lock(42), 'taken';",
        try_take: "SELECT pg_try_advisory_lock(42), 'tried';",
        refused: "f|",
        give: "SELECT pg_advisory_unlock(42), 'given';",
    };
    let observer = sqlx::PgPool::connect(&pg.url()).await.unwrap();
    let waiting = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM pg_locks
             WHERE locktype = 'advisory' AND NOT granted AND objid = 42 AND objsubid = 1",
        )
        .fetch_one(&observer)
        .await
        .unwrap()
            == 1
    };
    foreign_and_lockkit_exclude_each_other(foreign, &lockkit, "42", waiting).await;

    // Keys that name no advisory lock, and semaphores, are refused.
    match lockkit.try_lock("orders").await {
        Err(LockError::Config(m)) => assert!(m.contains("64-bit integer"), "{m}"),
        other => panic!("a non-numeric raw key: {other:?}"),
    }
    match lockkit.semaphore("42", 2).try_acquire().await {
        Err(LockError::Unsupported { .. }) => {}
        other => panic!("a semaphore with raw keys: {other:?}"),
    }
    match lockkit::connect(&format!("{}?key=raw", pg.url())).await {
        Err(LockError::InvalidUrl { reason, .. }) => assert!(reason.contains("mode=advisory")),
        other => panic!("key=raw on leases: {:?}", other.map(|_| ())),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_get_lock_and_lockkit_raw_keys_exclude_each_other() {
    let db = MariaDb::start().await.unwrap();
    let lockkit: Locker = lockkit::connect(&format!("{}?mode=get_lock&key=raw", db.url()))
        .await
        .unwrap();
    let client = ForeignClient::spawn("mariadb", db.client().unwrap()).unwrap();
    let foreign = Foreign {
        client,
        take: "SELECT GET_LOCK('orders', 60), 'taken';",
        try_take: "SELECT GET_LOCK('orders', 0), 'tried';",
        refused: "0\t",
        give: "SELECT RELEASE_LOCK('orders'), 'given';",
    };
    let observer = sqlx::MySqlPool::connect(&db.url()).await.unwrap();
    let waiting = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM information_schema.processlist
             WHERE state = 'User lock' AND info LIKE '%GET_LOCK(''orders''%'",
        )
        .fetch_one(&observer)
        .await
        .unwrap()
            == 1
    };
    foreign_and_lockkit_exclude_each_other(foreign, &lockkit, "orders", waiting).await;

    let long = "k".repeat(65);
    match lockkit.try_lock(long.as_str()).await {
        Err(LockError::Config(m)) => assert!(m.contains("at most 64"), "{m}"),
        other => panic!("a raw key too long for GET_LOCK: {other:?}"),
    }
    match lockkit.semaphore("orders", 2).try_acquire().await {
        Err(LockError::Unsupported { .. }) => {}
        other => panic!("a semaphore with raw keys: {other:?}"),
    }
}
