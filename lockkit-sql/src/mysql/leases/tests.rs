#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

//! Exclusive attempts against a real MariaDB: a write hold reads the queue only
//! when a reader may be in it, or when fair ([`super::super::sql::acquire`]);
//! a woken waiter's attempt ([`MySqlLeases::take_rung`]) makes the same grant
//! as the whole attempt where the key is free, and the whole attempt's answer
//! where it is not.

use std::time::Duration;

use lockkit_core::{AcquireRequest, FencingToken, LockKey, LockMode, OwnerId, Wait};
use lockkit_testkit::MariaDb;
use sqlx::{Connection, MySqlConnection};

use super::super::{MySqlDriver, MySqlOptions};
use crate::lease::LeaseBackend;

const TTL: Duration = Duration::from_secs(60);

fn request(key: &str, label: &str) -> AcquireRequest {
    let owner = OwnerId::new().with_label(label);
    AcquireRequest::new(LockKey::new(key).unwrap(), owner, TTL, Wait::NoWait)
}

/// The key's row: owner, fence and label.
async fn row(conn: &mut MySqlConnection, key: &str) -> (Option<String>, i64, Option<String>) {
    sqlx::query_as("SELECT owner, fence, label FROM lockkit_locks WHERE name = ?")
        .bind(key)
        .fetch_one(conn)
        .await
        .unwrap()
}

/// INSERT and UPDATE statements the server has run, in that order.
async fn statements(conn: &mut MySqlConnection) -> (i64, i64) {
    let count = |name: &'static str| {
        sqlx::query_scalar::<_, String>(
            "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = ?",
        )
        .bind(name)
    };
    let inserts = count("COM_INSERT").fetch_one(&mut *conn).await.unwrap();
    let updates = count("COM_UPDATE").fetch_one(&mut *conn).await.unwrap();
    (inserts.parse().unwrap(), updates.parse().unwrap())
}

/// A server and a driver on it (which made the tables).
async fn started() -> (MariaDb, MySqlDriver) {
    let db = MariaDb::start().await.unwrap();
    let options = MySqlOptions::from_url(&db.url()).unwrap();
    let driver = MySqlDriver::connect(options).await.unwrap();
    (db, driver)
}

#[tokio::test]
async fn a_rung_attempt_takes_a_free_key_with_the_next_token_and_its_label() {
    let (db, driver) = started().await;
    let leases = driver.backend();
    let first = request("stock", "first");
    let held = leases.try_acquire(&first).await.unwrap().unwrap();
    assert!(leases.release(&first.key, &first.owner).await.unwrap());

    let mut conn = MySqlConnection::connect(&db.url()).await.unwrap();
    let woken = request("stock", "woken");
    let before = statements(&mut conn).await;
    let grant = leases.take_rung(&mut conn, &woken).await.unwrap().unwrap();

    // One UPDATE, no upsert.
    let after = statements(&mut conn).await;
    assert_eq!((after.0 - before.0, after.1 - before.1), (0, 1));

    assert_eq!(grant.token, FencingToken(held.token.0 + 1));
    let (owner, fence, label) = row(&mut conn, "stock").await;
    assert_eq!(owner.as_deref(), Some(woken.owner.to_hex().as_str()));
    assert_eq!(fence, i64::try_from(grant.token.0).unwrap());
    assert_eq!(label, woken.stored_label());
}

#[tokio::test]
async fn a_rung_attempt_on_a_held_key_is_refused_and_otherwise_is_the_whole_attempt() {
    let (db, driver) = started().await;
    let leases = driver.backend();
    let holder = request("stock", "holder");
    let held = leases.try_acquire(&holder).await.unwrap().unwrap();
    let mut conn = MySqlConnection::connect(&db.url()).await.unwrap();
    let before = row(&mut conn, "stock").await;

    // Taken again before the woken waiter came: it is refused, the row untouched.
    let late = request("stock", "late");
    assert!(leases.take_rung(&mut conn, &late).await.unwrap().is_none());
    assert_eq!(row(&mut conn, "stock").await, before);
    assert_eq!(before.1, i64::try_from(held.token.0).unwrap());

    // The holder's own live hold: the whole attempt keeps its token.
    let again = leases.take_rung(&mut conn, &holder).await.unwrap().unwrap();
    assert_eq!(again.token, held.token);

    // A key with no row (purged meanwhile): the whole attempt creates it.
    let fresh = request("fresh", "fresh");
    let grant = leases.take_rung(&mut conn, &fresh).await.unwrap().unwrap();
    assert_eq!(grant.token, FencingToken(1));
}

#[tokio::test]
async fn a_writer_on_a_free_key_waits_for_a_queued_reader_in_a_second_statement() {
    let (db, driver) = started().await;
    let leases = driver.backend();
    let first = request("stock", "first");
    let held = leases.try_acquire(&first).await.unwrap().unwrap();
    let reader = request("stock", "reader").with_mode(LockMode::Shared);
    leases.enqueue_row(&reader).await.unwrap();
    assert!(leases.release(&first.key, &first.owner).await.unwrap());
    let mut conn = MySqlConnection::connect(&db.url()).await.unwrap();
    let free = row(&mut conn, "stock").await;

    // The key is free, but the reader is first: refused, the row as it was,
    // after the upsert that reads the queue.
    let writer = request("stock", "writer");
    let before = statements(&mut conn).await;
    assert!(leases.try_acquire(&writer).await.unwrap().is_none());
    let after = statements(&mut conn).await;
    assert_eq!((after.0 - before.0, after.1 - before.1), (2, 0));
    assert_eq!(row(&mut conn, "stock").await, free);

    // The reader gone, the turn is the writer's, while the mark lasts still
    // read from the queue; the next token.
    leases.dequeue_row(&reader).await.unwrap();
    let grant = leases.try_acquire(&writer).await.unwrap().unwrap();
    assert_eq!(grant.token, FencingToken(held.token.0 + 1));
}

#[tokio::test]
async fn a_queued_writer_or_a_lapsed_reader_costs_a_write_attempt_no_second_statement() {
    let (db, driver) = started().await;
    let leases = driver.backend();
    let first = request("stock", "first");
    leases.try_acquire(&first).await.unwrap().unwrap();
    let reader = request("stock", "reader").with_mode(LockMode::Shared);
    leases.enqueue_row(&reader).await.unwrap();
    leases.dequeue_row(&reader).await.unwrap();
    let queued = request("stock", "queued writer");
    leases.enqueue_row(&queued).await.unwrap();
    assert!(leases.release(&first.key, &first.owner).await.unwrap());
    let mut conn = MySqlConnection::connect(&db.url()).await.unwrap();
    // The reader's mark lapsed (as it does 2 s after its last push).
    sqlx::query("UPDATE lockkit_locks SET readers_until = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND")
        .execute(&mut conn)
        .await
        .unwrap();

    // A write hold does not let a queued writer go first (unless fair): one upsert.
    let writer = request("stock", "writer");
    let before = statements(&mut conn).await;
    assert!(leases.try_acquire(&writer).await.unwrap().is_some());
    let after = statements(&mut conn).await;
    assert_eq!((after.0 - before.0, after.1 - before.1), (1, 0));
}

#[tokio::test]
async fn a_fair_writer_reads_its_turn_in_one_statement() {
    let (db, driver) = started().await;
    let leases = driver.backend();
    let first = request("stock", "first");
    leases.try_acquire(&first).await.unwrap().unwrap();
    let queued = request("stock", "queued writer");
    leases.enqueue_row(&queued).await.unwrap();
    assert!(leases.release(&first.key, &first.owner).await.unwrap());
    let mut conn = MySqlConnection::connect(&db.url()).await.unwrap();

    let mut fair = request("stock", "fair");
    fair.fair = true;
    let before = statements(&mut conn).await;
    assert!(leases.try_acquire(&fair).await.unwrap().is_none());
    let after = statements(&mut conn).await;
    assert_eq!((after.0 - before.0, after.1 - before.1), (1, 0));
}
