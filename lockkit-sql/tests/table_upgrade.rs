//! A key table made by an earlier lockkit (no `label` column, no holders table)
//! keeps working on PostgreSQL and MariaDB: connecting adds what is missing, the
//! fencing counter carries on, and read locks, permits and inspection work on it.
//! `tables=existing` refuses such a table with the fix; on PostgreSQL, tables
//! that are up to date are left alone.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit::{LockMode, Locker};
use sqlx::{AssertSqlSafe, Connection};

/// The key row an earlier lockkit left: free, its counter at 41.
const LEFT_AT: u64 = 41;

async fn new_modes_carry_the_old_counter_on(url: &str) {
    let locker: Locker = lockkit::connect(url).await.unwrap().with_label("upgraded");
    let read = locker.read_lock("old").no_wait().await.unwrap();
    assert_eq!(
        read.token().get(),
        LEFT_AT + 1,
        "the counter did not carry on"
    );
    let seen = locker.inspect("old").await.unwrap();
    assert_eq!(seen.holders.len(), 1);
    assert_eq!(seen.holders[0].mode, LockMode::Shared);
    assert_eq!(seen.holders[0].label.as_deref(), Some("upgraded"));
    read.release().await.unwrap();
    let permit = locker.semaphore("old", 2).try_acquire().await.unwrap();
    assert_eq!(permit.token().get(), LEFT_AT + 2);
    permit.release().await.unwrap();
    let lock = locker.lock("old").no_wait().await.unwrap();
    assert_eq!(lock.token().get(), LEFT_AT + 3);
    let seen = locker.inspect("old").await.unwrap();
    assert_eq!(seen.holders[0].label.as_deref(), Some("upgraded"));
    lock.release().await.unwrap();
}

#[tokio::test]
async fn postgres_upgrades_a_table_from_an_earlier_lockkit() {
    let server = lockkit_testkit::Postgres::start().await.unwrap();
    let pool = sqlx::PgPool::connect(&server.url()).await.unwrap();
    for statement in [
        "CREATE TABLE lockkit_locks (name TEXT PRIMARY KEY, owner TEXT, fence BIGINT NOT NULL,
                                     expires_at TIMESTAMPTZ NOT NULL)"
            .to_string(),
        format!("INSERT INTO lockkit_locks VALUES ('old', NULL, {LEFT_AT}, '-infinity')"),
    ] {
        sqlx::query(AssertSqlSafe(statement))
            .execute(&pool)
            .await
            .unwrap();
    }
    let existing = format!("{}?tables=existing", server.url());
    let refused = lockkit::connect(&existing).await.unwrap_err();
    assert!(
        matches!(&refused, lockkit::LockError::Config(m) if m.contains("earlier lockkit")),
        "{refused:?}"
    );
    new_modes_carry_the_old_counter_on(&server.url()).await;
    lockkit::connect(&existing).await.unwrap();
}

/// A driver connecting to tables that are up to date runs no DDL, whose
/// table lock would wait for (and stall) the lock statements running.
#[tokio::test]
async fn postgres_connects_to_current_tables_without_a_table_lock() {
    let server = lockkit_testkit::Postgres::start().await.unwrap();
    let first = lockkit::connect(&server.url()).await.unwrap();
    let mut running = sqlx::PgConnection::connect(&server.url()).await.unwrap();
    sqlx::raw_sql("BEGIN; LOCK TABLE lockkit_locks, lockkit_locks_waiters IN ROW EXCLUSIVE MODE")
        .execute(&mut running)
        .await
        .unwrap();

    let second = tokio::time::timeout(Duration::from_secs(10), lockkit::connect(&server.url()))
        .await
        .expect("connecting waited for a table lock");

    let held = second.unwrap().lock("k").no_wait().await.unwrap();
    held.release().await.unwrap();
    sqlx::raw_sql("COMMIT").execute(&mut running).await.unwrap();
    drop(first);
}

#[tokio::test]
async fn mariadb_upgrades_a_table_from_an_earlier_lockkit() {
    let server = lockkit_testkit::MariaDb::start().await.unwrap();
    let pool = sqlx::MySqlPool::connect(&server.url()).await.unwrap();
    for statement in [
        "CREATE TABLE lockkit_locks (
             name VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
             owner CHAR(32) NULL, fence BIGINT NOT NULL, expires_at DATETIME(6) NOT NULL)"
            .to_string(),
        format!("INSERT INTO lockkit_locks VALUES ('old', NULL, {LEFT_AT}, '1970-01-01 00:00:01')"),
    ] {
        sqlx::query(AssertSqlSafe(statement))
            .execute(&pool)
            .await
            .unwrap();
    }
    let existing = format!("{}?tables=existing", server.url());
    let refused = lockkit::connect(&existing).await.unwrap_err();
    assert!(
        matches!(&refused, lockkit::LockError::Config(m) if m.contains("earlier lockkit")),
        "{refused:?}"
    );
    new_modes_carry_the_old_counter_on(&server.url()).await;
    lockkit::connect(&existing).await.unwrap();
}

#[tokio::test]
async fn mariadb_turns_a_latin1_label_column_into_utf8mb4() {
    // The server's default character set is latin1: an earlier lockkit's tables
    // got latin1 `label` columns.
    let server = lockkit_testkit::MariaDb::start_with_settings(&["--character-set-server=latin1"])
        .await
        .unwrap();
    let pool = sqlx::MySqlPool::connect(&server.url()).await.unwrap();
    sqlx::query(
        "CREATE TABLE lockkit_locks (
             name VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
             owner CHAR(32) NULL, fence BIGINT NOT NULL, expires_at DATETIME(6) NOT NULL,
             label TEXT NULL)",
    )
    .execute(&pool)
    .await
    .unwrap();
    let locker: Locker = lockkit::connect(&server.url())
        .await
        .unwrap()
        .with_label("работник/🔒");
    let charsets: Vec<String> = sqlx::query_scalar(
        "SELECT CHARACTER_SET_NAME FROM information_schema.COLUMNS
         WHERE TABLE_SCHEMA = DATABASE() AND COLUMN_NAME = 'label' ORDER BY TABLE_NAME",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(charsets, ["utf8mb4", "utf8mb4"], "key and holders tables");
    let lock = locker.lock("🔒").no_wait().await.unwrap();
    let seen = locker.inspect("🔒").await.unwrap();
    assert_eq!(seen.holders[0].label.as_deref(), Some("работник/🔒"));
    lock.release().await.unwrap();
}
