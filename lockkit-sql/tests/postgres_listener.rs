//! The drivers of one process that connect alike share one `LISTEN`
//! connection: PostgreSQL signals every listening backend of the database at
//! each release, so one listener per driver made each release cost the server
//! one wake-up per driver. A real PostgreSQL.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit_core::Locker;
use lockkit_sql::postgres::{PgDriver, PgOptions};
use lockkit_testkit::Postgres;
use sqlx::Connection;

/// Far longer than any wait here should take.
const WITHIN: Duration = Duration::from_secs(15);

async fn listening(server: &Postgres) -> i64 {
    let mut admin = sqlx::PgConnection::connect(&server.url()).await.unwrap();
    sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %'")
        .fetch_one(&mut admin)
        .await
        .unwrap()
}

/// Waits until exactly `n` connections listen.
async fn until_listening(server: &Postgres, n: i64) {
    lockkit_conformance::until(&format!("{n} listeners"), WITHIN, || async {
        listening(server).await == n
    })
    .await
    .expect("the listeners settle");
}

#[tokio::test]
async fn drivers_that_connect_alike_share_one_listen_connection() {
    let server = Postgres::start().await.unwrap();
    let mut lockers = Vec::new();
    for _ in 0..4 {
        lockers.push(lockkit::connect(&server.url()).await.unwrap());
    }
    until_listening(&server, 1).await;
    // Another application name is another audience: a listener of its own.
    let other = format!("{}?application_name=other", server.url());
    lockers.push(lockkit::connect(&other).await.unwrap());
    until_listening(&server, 2).await;

    // A waiter of one driver is granted on another driver's release.
    let held = lockers[0].lock("k").no_wait().await.unwrap();
    let waiter = lockers[3].clone();
    let waiting = tokio::spawn(async move { waiter.lock("k").wait(WITHIN).await });
    lockkit_conformance::until("the waiter queues", WITHIN, || async {
        lockers[1].inspect("k").await.unwrap().waiters == Some(1)
    })
    .await
    .unwrap();
    held.release().await.unwrap();
    waiting.await.unwrap().unwrap().release().await.unwrap();

    // The last driver of an audience gone, its listener goes.
    lockers.truncate(4);
    until_listening(&server, 1).await;
    lockers.clear();
    until_listening(&server, 0).await;
}

/// A driver made on a runtime that has ended leaves the listener it started
/// to the drivers of other runtimes: the next wait starts it again there.
#[test]
fn a_listener_whose_runtime_ended_is_started_again_by_the_next_wait() {
    let main = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ended = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = main.block_on(Postgres::start()).unwrap();
    let first: Locker = ended.block_on(lockkit::connect(&server.url())).unwrap();
    main.block_on(until_listening(&server, 1));
    let second: Locker = main.block_on(lockkit::connect(&server.url())).unwrap();
    drop(ended);
    main.block_on(async {
        until_listening(&server, 0).await;
        let held = second.lock("k").no_wait().await.unwrap();
        let waiter = second.clone();
        let waiting = tokio::spawn(async move { waiter.lock("k").wait(WITHIN).await });
        until_listening(&server, 1).await;
        held.release().await.unwrap();
        waiting.await.unwrap().unwrap().release().await.unwrap();
    });
    drop(first);
}

/// The shared listener keeps the connection settings it reconnects with, the
/// password among them: the driver's `Debug` shows none of it.
#[tokio::test]
async fn the_drivers_debug_shows_no_password() {
    let server = Postgres::start().await.unwrap();
    // The testkit's server trusts local connections: any password connects.
    let url = server.url().replacen("postgres@", "postgres:hunter2@", 1);
    assert!(url.contains("hunter2"), "{url}");
    let driver = PgDriver::connect(PgOptions::from_url(&url).unwrap())
        .await
        .unwrap();
    until_listening(&server, 1).await;
    let shown = format!("{driver:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
}
