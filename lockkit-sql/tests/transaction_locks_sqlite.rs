//! `lockkit::sqlite::TransactionLocks` on a SQLite file: a transaction lock is
//! the database's write lock, so it excludes other transactions until it
//! commits, rolls back or is dropped; a bounded wait times out and leaves the
//! transaction usable; a transaction whose snapshot went stale is lost; and,
//! as documented, a rolled-back transaction's token is handed out again.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::{Duration, Instant};

use lockkit::LockError;
use lockkit::sqlite::TransactionLocks;
use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode};

async fn setup() -> (tempfile::TempDir, SqlitePool, TransactionLocks) {
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteConnectOptions::new()
        .filename(dir.path().join("shop.db"))
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal);
    let pool = SqlitePool::connect_with(options).await.unwrap();
    let locks = TransactionLocks::new(pool.clone()).await.unwrap();
    (dir, pool, locks)
}

#[tokio::test]
async fn a_transaction_excludes_others_until_it_commits() {
    let (_dir, pool, locks) = setup().await;
    let mut a = pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
    let first = locks.lock(&mut a, "sku-42").await.unwrap();
    let mut b = pool.begin().await.unwrap();
    let refused = locks.lock(&mut b, "other-key").no_wait().await.unwrap_err();
    assert!(
        matches!(refused, LockError::Contended { .. }),
        "{refused:?}"
    );
    let started = Instant::now();
    let waited = locks
        .lock(&mut b, "sku-42")
        .wait(Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(matches!(waited, LockError::Timeout { .. }), "{waited:?}");
    assert!(started.elapsed() >= Duration::from_millis(300));
    let busy_timeout: i64 = sqlx::query_scalar("PRAGMA busy_timeout")
        .fetch_one(&mut *b)
        .await
        .unwrap();
    assert_eq!(
        busy_timeout, 5000,
        "the wait's busy timeout was left behind"
    );
    first.check(&mut a).await.unwrap();

    a.commit().await.unwrap();
    let second = locks.lock(&mut b, "sku-42").no_wait().await.unwrap();
    assert!(second.token() > first.token());
    second.check(&mut b).await.unwrap();
    b.commit().await.unwrap();
}

#[tokio::test]
async fn rollback_and_drop_release_and_a_rolled_back_token_comes_again() {
    let (_dir, pool, locks) = setup().await;
    let mut a = pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
    let rolled_back = locks.lock(&mut a, "k").await.unwrap();
    a.rollback().await.unwrap();

    let mut b = pool.begin().await.unwrap();
    let after_rollback = locks.lock(&mut b, "k").no_wait().await.unwrap();
    // The counter is written in the transaction: it rolled back with it.
    assert_eq!(after_rollback.token(), rolled_back.token());
    drop(b);

    let mut c = pool.begin().await.unwrap();
    locks
        .lock(&mut c, "k")
        .wait(Duration::from_secs(10))
        .await
        .unwrap();
    c.commit().await.unwrap();
}

#[tokio::test]
async fn a_transaction_that_read_before_another_wrote_is_lost() {
    let (_dir, pool, locks) = setup().await;
    let mut reader = pool.begin().await.unwrap();
    let _: i64 = sqlx::query_scalar("SELECT count(*) FROM lockkit_locks_tx_locks")
        .fetch_one(&mut *reader)
        .await
        .unwrap();
    let mut writer = pool.begin().await.unwrap();
    locks.lock(&mut writer, "k").await.unwrap();
    writer.commit().await.unwrap();

    let stale = locks.lock(&mut reader, "k").no_wait().await.unwrap_err();
    assert!(matches!(stale, LockError::Lost { .. }), "{stale:?}");
}
