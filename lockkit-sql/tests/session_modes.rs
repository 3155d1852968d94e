//! Session modes (PostgreSQL advisory, MySQL `GET_LOCK`) against real servers:
//! a semaphore's slots are nobody else's key, a limit of 0 is refused, and a
//! force-release reaches only the holders of its own database.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit::{LockError, Locker};

async fn locker(url: &str) -> Locker {
    lockkit::connect(url).await.unwrap()
}

/// A permit holds slot 0 of `jobs`; the key `jobs#0` (what a slot was once
/// named) is another lock, free, and breaking it leaves the permit alone.
async fn slots_are_not_other_keys(url: &str) {
    let (a, b) = (locker(url).await, locker(url).await);
    let permit = a.semaphore("jobs", 1).try_acquire().await.unwrap();
    for name in ["jobs#0", "jobs0", "jobs:0"] {
        let other = b.lock(name).no_wait().await.unwrap_or_else(|e| {
            panic!("`{name}` was refused while only a permit of `jobs` was held: {e}")
        });
        other.release().await.unwrap();
        b.driver()
            .force_release(&name.parse().unwrap())
            .await
            .unwrap();
    }
    permit
        .extend(Duration::from_secs(5))
        .await
        .expect("force-releasing other keys broke the permit");
    permit.release().await.unwrap();
}

async fn a_limit_of_zero_is_a_config_error(url: &str) {
    let a = locker(url).await;
    match a.semaphore("none", 0).try_acquire().await {
        Err(LockError::Config(_)) => {}
        other => panic!("a semaphore of 0 permits: expected Config, got {other:?}"),
    }
}

#[tokio::test]
async fn advisory_slots_are_not_other_keys_and_zero_permits_are_refused() {
    let server = lockkit_testkit::Postgres::start().await.unwrap();
    let url = format!("{}?mode=advisory", server.url());
    slots_are_not_other_keys(&url).await;
    a_limit_of_zero_is_a_config_error(&url).await;
}

#[tokio::test]
async fn get_lock_slots_are_not_other_keys_and_zero_permits_are_refused() {
    let server = lockkit_testkit::MariaDb::start().await.unwrap();
    let url = format!("{}?mode=get_lock", server.url());
    slots_are_not_other_keys(&url).await;
    a_limit_of_zero_is_a_config_error(&url).await;
}

/// Two databases of one server use the same table and key: a force-release in
/// one ends no session of the other (advisory locks are per database).
#[tokio::test]
async fn advisory_force_release_stays_in_its_database() {
    let server = lockkit_testkit::Postgres::start().await.unwrap();
    let pool = sqlx::PgPool::connect(&server.url()).await.unwrap();
    sqlx::query("CREATE DATABASE other")
        .execute(&pool)
        .await
        .unwrap();
    let here = format!("{}?mode=advisory", server.url());
    let there = here.replace("/postgres?", "/other?");
    assert_ne!(here, there);
    let holder = locker(&here).await;
    let held = holder.lock("shared-name").no_wait().await.unwrap();
    let permit = holder.semaphore("sem", 2).try_acquire().await.unwrap();
    let elsewhere = locker(&there).await;
    for name in ["shared-name", "sem"] {
        let broke = elsewhere
            .driver()
            .force_release(&name.parse().unwrap())
            .await
            .unwrap();
        assert!(
            !broke,
            "force_release of `{name}` in another database ended a session"
        );
    }
    held.extend(Duration::from_secs(5))
        .await
        .expect("the lock's session was ended");
    permit
        .extend(Duration::from_secs(5))
        .await
        .expect("the permit's session was ended");
    held.release().await.unwrap();
    permit.release().await.unwrap();
}
