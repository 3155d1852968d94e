#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

//! Confirming a bound lease ([`super::confirm`]) against a real MariaDB: it
//! clears `bound` while the lease is still the holder's, and fires the grant's
//! loss signal once the key was taken over; a hold released before its
//! confirmation is due sends none.

use std::time::Duration;

use lockkit_core::{FencingToken, LockKey, OwnerId};
use lockkit_testkit::MariaDb;
use sqlx::MySqlPool;
use tokio::time::timeout;

use super::super::{MySqlDriver, MySqlOptions};
use super::{Confirmation, confirm};

const KEY: &str = "stock";

/// The key's row, held by `owner` with `fence`, bound to the bell at `bound`.
async fn set_row(admin: &MySqlPool, owner: &OwnerId, fence: i64, bound: i64) {
    sqlx::query(
        "REPLACE INTO lockkit_locks (name, owner, fence, expires_at, bound) \
         VALUES (?, ?, ?, NOW(6) + INTERVAL 60 SECOND, ?)",
    )
    .bind(KEY)
    .bind(owner.to_hex())
    .bind(fence)
    .bind(bound)
    .execute(admin)
    .await
    .unwrap();
}

/// A server, an admin pool on it, and the confirmation of a driver on it
/// (which made the tables; kept, with the server, for the whole test).
async fn started() -> (MariaDb, MySqlDriver, MySqlPool, Confirmation) {
    let db = MariaDb::start().await.unwrap();
    let driver = MySqlDriver::connect(MySqlOptions::from_url(&db.url()).unwrap())
        .await
        .unwrap();
    let admin = MySqlPool::connect(&db.url()).await.unwrap();
    let how = driver.backend().confirmation.clone();
    (db, driver, admin, how)
}

fn far() -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_secs(60)
}

#[tokio::test]
async fn a_confirmation_clears_the_binding_or_signals_a_lease_taken_over() {
    let (_db, _driver, admin, how) = started().await;
    let (key, owner) = (LockKey::new(KEY).unwrap(), OwnerId::new());

    // Still ours: confirmed, and no loss.
    set_row(&admin, &owner, 5, 5).await;
    // The hold goes on (its sender kept): confirmed at once.
    let (_going_on, released) = tokio::sync::oneshot::channel();
    let lease = (key.clone(), &owner, FencingToken(5));
    let loss = confirm(how.clone(), lease, (Duration::ZERO, released), far());
    lockkit_conformance::until(
        "the lease is confirmed",
        Duration::from_secs(10),
        || async {
            let bound: Option<i64> =
                sqlx::query_scalar("SELECT bound FROM lockkit_locks WHERE name = ?")
                    .bind(KEY)
                    .fetch_one(&admin)
                    .await
                    .unwrap();
            bound.is_none()
        },
    )
    .await
    .unwrap();
    assert_eq!(loss.reason(), None);

    // Taken over (by the next holder of the bell) before it was confirmed.
    let next = OwnerId::new();
    set_row(&admin, &next, 6, 6).await;
    let (_going_on, released) = tokio::sync::oneshot::channel();
    let lease = (key, &owner, FencingToken(5));
    let loss = confirm(how, lease, (Duration::ZERO, released), far());
    let reason = timeout(Duration::from_secs(10), loss.fired())
        .await
        .unwrap();
    assert!(reason.contains("took the lease over"), "{reason}");
}

#[tokio::test]
async fn a_hold_released_before_its_confirmation_is_due_sends_none() {
    let (_db, _driver, admin, how) = started().await;
    let (key, owner) = (LockKey::new(KEY).unwrap(), OwnerId::new());
    // The key is someone else's now: a confirmation sent would fire the loss.
    set_row(&admin, &OwnerId::new(), 6, 6).await;
    let due = Duration::from_millis(200);

    // Two holds, due at the same time: one still going on, one released.
    let (_going_on, kept) = tokio::sync::oneshot::channel();
    let lease = (key.clone(), &owner, FencingToken(5));
    let control = confirm(how.clone(), lease, (due, kept), far());
    let (ringing, released) = tokio::sync::oneshot::channel::<()>();
    let lease = (key, &owner, FencingToken(5));
    let loss = confirm(how, lease, (due, released), far());
    drop(ringing);

    // The one going on confirms, and learns it was taken over; the released
    // one, due at the same moment, sends nothing, so learns nothing, even a
    // second later.
    timeout(Duration::from_secs(10), control.fired())
        .await
        .unwrap();
    assert!(
        timeout(Duration::from_secs(1), loss.fired()).await.is_err(),
        "a released hold sent its confirmation: {:?}",
        loss.reason()
    );
}
