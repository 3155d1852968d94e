#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

//! A wait on a bell ([`super::wait`]) against a real MariaDB: rung, it takes the
//! key on the server, bound to its bell, and dates the lease from the take;
//! rung onto a key still held, it takes nothing. The key it took is released
//! and the bell rung in one request ([`super::release_and_ring`]), which
//! frees the key only if it is still the taker's.

use std::time::Duration;

use lockkit_core::{AcquireRequest, FencingToken, LockKey, OwnerId, Wait};
use lockkit_testkit::MariaDb;
use sqlx::{AssertSqlSafe, Connection, MySqlConnection, MySqlPool};
use tokio::task::JoinHandle;
use tokio::time::{Instant, timeout};

use super::super::doorbell::BELL;
use super::super::{MySqlDriver, MySqlOptions};
use super::{Rung, Taker, release_and_ring, wait};
use crate::lease::LeaseBackend;

const TTL: Duration = Duration::from_secs(60);
const KEY: &str = "stock";

/// What [`BELL`] makes `KEY`'s bell of.
fn bell_name() -> String {
    format!("lockkit_locks:{KEY}")
}

/// A server, a driver on it, and `KEY` held (its token) by a holder whose bell
/// is held on `other`.
async fn held_with_its_bell() -> (MariaDb, MySqlDriver, MySqlConnection, FencingToken) {
    let db = MariaDb::start().await.unwrap();
    let driver = MySqlDriver::connect(MySqlOptions::from_url(&db.url()).unwrap())
        .await
        .unwrap();
    let req = AcquireRequest::new(
        LockKey::new(KEY).unwrap(),
        OwnerId::new(),
        TTL,
        Wait::NoWait,
    );
    let held = driver.backend().try_acquire(&req).await.unwrap().unwrap();
    let mut other = MySqlConnection::connect(&db.url()).await.unwrap();
    let got: i64 = sqlx::query_scalar(AssertSqlSafe(format!("SELECT GET_LOCK({BELL}, 5)")))
        .bind(bell_name())
        .fetch_one(&mut other)
        .await
        .unwrap();
    assert_eq!(got, 1);
    (db, driver, other, held.token)
}

/// A wait on `KEY`'s bell, blocked once this returns.
async fn blocked_wait(db: &MariaDb, driver: &MySqlDriver) -> JoinHandle<Rung> {
    let admin = MySqlPool::connect(&db.url()).await.unwrap();
    let doorbells = &driver.backend().doorbells;
    let key = LockKey::new(KEY).unwrap();
    let bell = doorbells.connection(&key).await.unwrap();
    let taker = Taker {
        owner: OwnerId::new().to_hex(),
        label: Some("web-1".into()),
        ttl: TTL,
    };
    let statements = doorbells.wait_statements();
    let waiting = tokio::spawn(wait(bell, statements, key, taker, Duration::from_secs(10)));
    lockkit_conformance::until("the wait blocks", Duration::from_secs(10), || async {
        let blocked: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = 'User lock'",
        )
        .fetch_one(&admin)
        .await
        .unwrap();
        blocked == 1
    })
    .await
    .unwrap();
    waiting
}

/// Rings the bell held on `other`, after freeing the key if `free`.
async fn ring(other: &mut MySqlConnection, free: bool) {
    if free {
        sqlx::query("UPDATE lockkit_locks SET owner = NULL WHERE name = ?")
            .bind(KEY)
            .execute(&mut *other)
            .await
            .unwrap();
    }
    sqlx::query(AssertSqlSafe(format!("DO RELEASE_LOCK({BELL})")))
        .bind(bell_name())
        .execute(&mut *other)
        .await
        .unwrap();
}

/// The key's row: owner, fence, label, bound, and µs of lease left.
async fn row(
    conn: &mut MySqlConnection,
) -> (Option<String>, i64, Option<String>, Option<i64>, i64) {
    sqlx::query_as(
        "SELECT owner, fence, label, bound, TIMESTAMPDIFF(MICROSECOND, NOW(6), expires_at) \
         FROM lockkit_locks WHERE name = ?",
    )
    .bind(KEY)
    .fetch_one(conn)
    .await
    .unwrap()
}

#[tokio::test]
async fn a_rung_wait_takes_the_key_bound_to_its_bell_and_dates_the_lease_from_the_take() {
    let (db, driver, mut other, held) = held_with_its_bell().await;
    let waiting = blocked_wait(&db, &driver).await;
    // The condition under test: the wait blocked long before it was rung, so a
    // lease dated from the wait's start would show half a second less.
    tokio::time::sleep(Duration::from_millis(500)).await;
    ring(&mut other, true).await;
    let rung = timeout(Duration::from_secs(10), waiting)
        .await
        .unwrap()
        .unwrap();
    let Rung::Took {
        token, deadline, ..
    } = rung
    else {
        panic!("the rung wait took nothing: {rung:?}");
    };
    assert_eq!(token, FencingToken(held.0 + 1));

    let (owner, fence, label, bound, left_us) = row(&mut other).await;
    let left = deadline.saturating_duration_since(Instant::now());
    assert!(owner.is_some_and(|o| o.len() == 32));
    assert_eq!((fence, bound), (token.0 as i64, Some(token.0 as i64)));
    assert_eq!(label.as_deref(), Some("web-1"));
    // Never later than the server's end (1 ms for the two clocks' rates)...
    let server_left = Duration::from_micros(left_us as u64);
    assert!(
        left <= server_left + Duration::from_millis(1),
        "{left:?} > {server_left:?}"
    );
    // ...and dated from the take, not from before the wait.
    assert!(
        left > TTL - Duration::from_millis(250),
        "{left:?} left of {TTL:?}"
    );
}

#[tokio::test]
async fn a_wait_rung_onto_a_held_key_keeps_the_bell_and_takes_nothing() {
    let (db, driver, mut other, held) = held_with_its_bell().await;
    let before = row(&mut other).await;
    let waiting = blocked_wait(&db, &driver).await;
    ring(&mut other, false).await;
    let rung = timeout(Duration::from_secs(10), waiting)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(rung, Rung::Ours { .. }), "{rung:?}");
    let after = row(&mut other).await;
    assert_eq!((after.0, after.1, after.3), (before.0, held.0 as i64, None));
}

/// A wait that took `KEY`: its bell.
async fn took(db: &MariaDb, driver: &MySqlDriver, other: &mut MySqlConnection) -> Rung {
    let waiting = blocked_wait(db, driver).await;
    ring(other, true).await;
    let rung = timeout(Duration::from_secs(10), waiting)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(rung, Rung::Took { .. }), "{rung:?}");
    rung
}

/// Whether some session holds `KEY`'s bell.
async fn bell_held(conn: &mut MySqlConnection) -> bool {
    let holder: Option<i64> =
        sqlx::query_scalar(AssertSqlSafe(format!("SELECT IS_USED_LOCK({BELL})")))
            .bind(bell_name())
            .fetch_one(conn)
            .await
            .unwrap();
    holder.is_some()
}

#[tokio::test]
async fn a_taken_key_is_freed_and_its_bell_rung_on_the_bells_connection() {
    let (db, driver, mut other, _) = held_with_its_bell().await;
    let Rung::Took { bell, token, .. } = took(&db, &driver, &mut other).await else {
        unreachable!()
    };
    assert!(bell_held(&mut other).await);

    let freed = release_and_ring(bell, Duration::from_secs(5)).await;
    assert_eq!(freed, Some(true));
    let (owner, fence, ..) = row(&mut other).await;
    assert_eq!((owner, fence), (None, token.0 as i64));
    assert!(!bell_held(&mut other).await, "the bell was not rung");
}

#[tokio::test]
async fn a_key_taken_over_since_is_left_alone_and_the_bell_rung_anyway() {
    let (db, driver, mut other, _) = held_with_its_bell().await;
    let Rung::Took { bell, .. } = took(&db, &driver, &mut other).await else {
        unreachable!()
    };
    // Someone else holds the key now (as if the lease had ended and been taken).
    sqlx::query(
        "UPDATE lockkit_locks SET owner = 'someone else', fence = fence + 1 WHERE name = ?",
    )
    .bind(KEY)
    .execute(&mut other)
    .await
    .unwrap();
    let before = row(&mut other).await;

    let freed = release_and_ring(bell, Duration::from_secs(5)).await;
    assert_eq!(freed, Some(false));
    let after = row(&mut other).await;
    assert_eq!((after.0, after.1), (before.0, before.1));
    assert!(!bell_held(&mut other).await, "the bell was not rung");
}
