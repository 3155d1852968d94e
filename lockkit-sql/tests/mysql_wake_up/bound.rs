//! A lease a rung waiter's wait took on the server is bound to the key's bell
//! until its holder confirms it: a waiter that died with such a lease leaves it
//! to the next waiter, and a confirmed lease stands without its bell.

use std::time::Duration;

use lockkit_core::{LockError, Locker};
use sqlx::{AssertSqlSafe, Connection, MySqlConnection, MySqlPool};
use tokio::time::timeout;

use super::{
    KEY, LONG, TTL, bell_taken, blocked_on_bells, holder_with_a_bell, locker, until, waiting,
};
use lockkit_testkit::MariaDb;

const BELL: &str = "SHA1(CONCAT('lockkit-wake:', DATABASE(), '.', ?))";

/// The key's `bound` column.
async fn bound(admin: &MySqlPool) -> Option<i64> {
    sqlx::query_scalar("SELECT bound FROM lockkit_locks WHERE name = ?")
        .bind(KEY)
        .fetch_one(admin)
        .await
        .unwrap()
}

/// Asserts that `locker` waits for `KEY` in vain, for 800 ms.
async fn refused(locker: &Locker) {
    let refused = locker
        .lock(KEY)
        .ttl(TTL)
        .wait(Duration::from_millis(800))
        .await;
    assert!(
        matches!(refused, Err(LockError::Timeout { .. })),
        "{refused:?}"
    );
}

/// What the wait of a waiter that died leaves: the key's bell held by its
/// connection, and the key taken, bound to that bell, for a minute.
#[tokio::test]
async fn a_lease_taken_for_a_waiter_that_died_goes_to_the_next_waiter() {
    let db = MariaDb::start().await.unwrap();
    let url = db.url();
    let next = locker(&url).await;
    let mut dead = MySqlConnection::connect(&url).await.unwrap();
    let got: i64 = sqlx::query_scalar(AssertSqlSafe(format!("SELECT GET_LOCK({BELL}, 5)")))
        .bind(format!("lockkit_locks:{KEY}"))
        .fetch_one(&mut dead)
        .await
        .unwrap();
    assert_eq!(got, 1);
    sqlx::query(
        "INSERT INTO lockkit_locks (name, owner, fence, expires_at, bound) \
         VALUES (?, '0123456789abcdef0123456789abcdef', 7, NOW(6) + INTERVAL 60 SECOND, 7)",
    )
    .bind(KEY)
    .execute(&mut dead)
    .await
    .unwrap();

    // While its taker's connection holds the bell, the lease stands.
    refused(&next).await;

    // Its connection gone, the next waiter gets the bell, and the key with it:
    // well within the minute the lease had left.
    dead.close().await.unwrap();
    let granted = timeout(Duration::from_secs(10), next.lock(KEY).ttl(TTL).wait(LONG))
        .await
        .expect("the lease of a dead waiter held the key")
        .unwrap();
    // 8 or, if the first waiter's wait (which ran on after its acquire timed
    // out) took the key as the bell came free and then freed it, 9.
    assert!(granted.token().0 > 7, "token {}", granted.token());
    granted.release().await.unwrap();
}

/// A waiter rung by a holder with a bell is granted by its wait, bound; it
/// confirms, and from then on its lease stands without the bell.
#[tokio::test]
async fn a_confirmed_lease_stands_without_its_bell() {
    let (db, admin, a, third, fourth) = holder_with_a_bell().await;
    let b = waiting(&third, LONG);
    until("the waiter blocks", || async {
        blocked_on_bells(&admin).await == 1
    })
    .await;
    a.release().await.unwrap();
    let b = timeout(LONG, b).await.unwrap().unwrap().unwrap();
    // Taken by its wait, bound; confirmed a second later.
    assert_eq!(bound(&admin).await, Some(b.token().0 as i64));
    until("the lease is confirmed", || async {
        bound(&admin).await.is_none()
    })
    .await;

    let holder: i64 = sqlx::query_scalar(AssertSqlSafe(format!("SELECT IS_USED_LOCK({BELL})")))
        .bind(format!("lockkit_locks:{KEY}"))
        .fetch_one(&admin)
        .await
        .unwrap();
    sqlx::query(AssertSqlSafe(format!("KILL CONNECTION {holder}")))
        .execute(&admin)
        .await
        .unwrap();
    until("the bell is free", || async { !bell_taken(&admin).await }).await;

    refused(&fourth).await;
    assert!(!b.is_lost());
    b.extend(TTL).await.unwrap();
    b.release().await.unwrap();
    drop(db);
}
