//! `lockkit::mysql::TransactionLocks` on a real MariaDB: a lock held by the
//! application's transaction excludes other transactions until it commits,
//! rolls back or is dropped; a bounded wait times out and leaves the
//! transaction usable, unless `innodb_rollback_on_timeout` rolled it back; a
//! deadlock's victim is lost; a latin1 connection takes the same lock as a
//! utf8mb4 one.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::str::FromStr;
use std::time::{Duration, Instant};

use lockkit::LockError;
use lockkit::mysql::TransactionLocks;
use sqlx::MySqlPool;
use sqlx::mysql::MySqlConnectOptions;

async fn setup(settings: &[&str]) -> (lockkit_testkit::MariaDb, MySqlPool, TransactionLocks) {
    let server = lockkit_testkit::MariaDb::start_with_settings(settings)
        .await
        .unwrap();
    let pool = MySqlPool::connect(&server.url()).await.unwrap();
    let locks = TransactionLocks::new(pool.clone()).await.unwrap();
    (server, pool, locks)
}

/// The transaction still answers and is still open.
async fn still_open(tx: &mut sqlx::Transaction<'_, sqlx::MySql>) {
    let open: i64 = sqlx::query_scalar("SELECT CAST(@@in_transaction AS SIGNED)")
        .fetch_one(&mut **tx)
        .await
        .unwrap();
    assert_eq!(open, 1, "the transaction was rolled back");
}

#[tokio::test]
async fn a_transaction_excludes_others_until_it_commits() {
    let (_server, pool, locks) = setup(&[]).await;
    for level in ["REPEATABLE READ", "READ COMMITTED", "SERIALIZABLE"] {
        let mut a = pool.begin().await.unwrap();
        let first = locks.lock(&mut a, "sku-42").await.unwrap();
        let mut b = pool
            .begin_with(sqlx::AssertSqlSafe(format!(
                "SET TRANSACTION ISOLATION LEVEL {level}; BEGIN"
            )))
            .await
            .unwrap();
        let refused = locks.lock(&mut b, "sku-42").no_wait().await.unwrap_err();
        assert!(
            matches!(refused, LockError::Contended { .. }),
            "{level}: {refused:?}"
        );
        let started = Instant::now();
        let waited = locks
            .lock(&mut b, "sku-42")
            .wait(Duration::from_millis(300))
            .await
            .unwrap_err();
        assert!(
            matches!(waited, LockError::Timeout { .. }),
            "{level}: {waited:?}"
        );
        // The server counts lock waits in whole seconds: 300 ms waits one.
        let waited_for = started.elapsed();
        assert!(waited_for >= Duration::from_millis(300), "{waited_for:?}");
        assert!(waited_for < Duration::from_secs(3), "{waited_for:?}");
        still_open(&mut b).await;
        let restored: i64 =
            sqlx::query_scalar("SELECT CAST(@@SESSION.innodb_lock_wait_timeout AS SIGNED)")
                .fetch_one(&mut *b)
                .await
                .unwrap();
        assert_eq!(restored, 50, "the wait's timeout was left behind");
        first.check(&mut a).await.unwrap();

        a.commit().await.unwrap();
        let second = locks.lock(&mut b, "sku-42").no_wait().await.unwrap();
        assert!(second.token() > first.token(), "{level}");
        second.check(&mut b).await.unwrap();
        b.commit().await.unwrap();
    }
}

#[tokio::test]
async fn rollback_and_drop_release_and_no_token_is_handed_out_twice() {
    let (_server, pool, locks) = setup(&[]).await;
    let mut a = pool.begin().await.unwrap();
    let rolled_back = locks.lock(&mut a, "k").await.unwrap();
    a.rollback().await.unwrap();

    let mut b = pool.begin().await.unwrap();
    let after_rollback = locks.lock(&mut b, "k").no_wait().await.unwrap();
    assert!(after_rollback.token() > rolled_back.token());
    drop(b);

    let mut c = pool.begin().await.unwrap();
    let after_drop = locks
        .lock(&mut c, "k")
        .wait(Duration::from_secs(10))
        .await
        .unwrap();
    assert!(after_drop.token() > after_rollback.token());
    c.commit().await.unwrap();
}

#[tokio::test]
async fn a_deadlock_victim_is_lost_and_the_other_goes_on() {
    let (_server, pool, locks) = setup(&[]).await;
    let mut a = pool.begin().await.unwrap();
    let mut b = pool.begin().await.unwrap();
    let a_left = locks.lock(&mut a, "left").await.unwrap();
    let b_right = locks.lock(&mut b, "right").await.unwrap();
    let (a_result, b_result) = tokio::join!(
        async {
            let r = locks.lock(&mut a, "right").await;
            (r, a_left.check(&mut a).await)
        },
        async {
            let r = locks.lock(&mut b, "left").await;
            (r, b_right.check(&mut b).await)
        }
    );
    let lost = |r: &Result<_, LockError>| matches!(r, Err(LockError::Lost { .. }));
    let ((a_lock, a_checked), (b_lock, b_checked)) = (a_result, b_result);
    assert!(
        lost(&a_lock) != lost(&b_lock),
        "exactly one victim: {:?} / {:?}",
        a_lock.map(|l| l.token()),
        b_lock.map(|l| l.token())
    );
    // The victim was rolled back whole: its earlier lock is gone too.
    let (victim_checked, other_checked) = if lost(&a_lock) {
        (a_checked, b_checked)
    } else {
        (b_checked, a_checked)
    };
    assert!(
        matches!(victim_checked, Err(LockError::Lost { .. })),
        "{victim_checked:?}"
    );
    other_checked.unwrap();
}

#[tokio::test]
async fn a_timeout_under_rollback_on_timeout_is_lost() {
    let (_server, pool, locks) = setup(&["--innodb-rollback-on-timeout=ON"]).await;
    let mut a = pool.begin().await.unwrap();
    locks.lock(&mut a, "k").await.unwrap();
    let mut b = pool.begin().await.unwrap();
    let earlier = locks.lock(&mut b, "other").await.unwrap();
    let timed_out = locks
        .lock(&mut b, "k")
        .wait(Duration::from_millis(100))
        .await
        .unwrap_err();
    assert!(matches!(timed_out, LockError::Lost { .. }), "{timed_out:?}");
    let checked = earlier.check(&mut b).await.unwrap_err();
    assert!(matches!(checked, LockError::Lost { .. }), "{checked:?}");
}

#[tokio::test]
async fn a_latin1_connection_takes_the_same_lock_as_a_utf8mb4_one() {
    let (server, pool, locks) = setup(&["--character-set-server=latin1"]).await;
    let latin1 = MySqlConnectOptions::from_str(&server.url())
        .unwrap()
        .charset("latin1");
    let latin1 = sqlx::mysql::MySqlPoolOptions::new()
        .connect_with(latin1)
        .await
        .unwrap();
    let key = "stock-\u{1F600}";
    let mut a = pool.begin().await.unwrap();
    locks.lock(&mut a, key).await.unwrap();
    let mut b = latin1.begin().await.unwrap();
    let refused = locks.lock(&mut b, key).no_wait().await.unwrap_err();
    assert!(
        matches!(refused, LockError::Contended { .. }),
        "{refused:?}"
    );
    // Another emoji is another key, not the same `?`.
    locks
        .lock(&mut b, "stock-\u{1F603}")
        .no_wait()
        .await
        .unwrap();
}

#[tokio::test]
async fn first_locks_of_new_keys_do_not_wait_for_each_other() {
    let (_server, pool, locks) = setup(&[]).await;
    let mut a = pool.begin().await.unwrap();
    let mut b = pool.begin().await.unwrap();
    // Under REPEATABLE READ, keys new to the table fall in one gap: a lock
    // that locked the gap would hold up the other key's first insert.
    for (i, key) in ["m-1", "m-2", "m-3"].into_iter().enumerate() {
        let tx = if i % 2 == 0 { &mut a } else { &mut b };
        locks
            .lock(tx, key)
            .wait(Duration::from_secs(2))
            .await
            .unwrap();
    }
    a.commit().await.unwrap();
    b.commit().await.unwrap();
}
