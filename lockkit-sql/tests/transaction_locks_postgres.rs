//! `lockkit::postgres::TransactionLocks` on a real PostgreSQL: a lock held by
//! the application's transaction excludes other transactions until it commits,
//! rolls back or is dropped; a bounded wait times out and leaves the
//! transaction usable; a deadlock's victim and a terminated session are lost;
//! the advisory form excludes advisory mode's holders of the key.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::{Duration, Instant};

use lockkit::LockError;
use lockkit::postgres::TransactionLocks;
use sqlx::PgPool;

async fn setup() -> (lockkit_testkit::Postgres, PgPool, TransactionLocks) {
    let server = lockkit_testkit::Postgres::start().await.unwrap();
    let pool = PgPool::connect(&server.url()).await.unwrap();
    let locks = TransactionLocks::new(pool.clone()).await.unwrap();
    (server, pool, locks)
}

/// The transaction still answers: a timed-out lock left it usable.
async fn usable(tx: &mut sqlx::Transaction<'_, sqlx::Postgres>) {
    let one: i32 = sqlx::query_scalar("SELECT 1")
        .fetch_one(&mut **tx)
        .await
        .unwrap();
    assert_eq!(one, 1);
}

#[tokio::test]
async fn a_transaction_excludes_others_until_it_commits() {
    let (_server, pool, locks) = setup().await;
    for advisory in [false, true] {
        let key = format!("sku-{advisory}");
        let mut a = pool.begin().await.unwrap();
        let mut b = pool.begin().await.unwrap();
        macro_rules! lock {
            ($tx:expr) => {{
                let request = locks.lock($tx, key.clone());
                if advisory {
                    request.advisory()
                } else {
                    request
                }
            }};
        }
        let first = lock!(&mut a).await.unwrap();

        let refused = lock!(&mut b).no_wait().await.unwrap_err();
        assert!(
            matches!(refused, LockError::Contended { .. }),
            "{refused:?}"
        );
        let started = Instant::now();
        let waited = lock!(&mut b)
            .wait(Duration::from_millis(300))
            .await
            .unwrap_err();
        assert!(matches!(waited, LockError::Timeout { .. }), "{waited:?}");
        assert!(started.elapsed() >= Duration::from_millis(300));
        usable(&mut b).await;
        first.check(&mut a).await.unwrap();

        a.commit().await.unwrap();
        let second = lock!(&mut b).wait(Duration::from_secs(5)).await.unwrap();
        assert!(second.token() > first.token(), "advisory={advisory}");
        let setting: String = sqlx::query_scalar("SELECT current_setting('lock_timeout')")
            .fetch_one(&mut *b)
            .await
            .unwrap();
        assert_eq!(setting, "0", "the wait's lock_timeout was left behind");
        second.check(&mut b).await.unwrap();
        b.commit().await.unwrap();
    }
}

#[tokio::test]
async fn rollback_and_drop_release_and_no_token_is_handed_out_twice() {
    let (_server, pool, locks) = setup().await;
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
    let (_server, pool, locks) = setup().await;
    let mut a = pool.begin().await.unwrap();
    let mut b = pool.begin().await.unwrap();
    locks.lock(&mut a, "left").await.unwrap();
    let b_right = locks.lock(&mut b, "right").await.unwrap();
    let (a_result, b_result) = tokio::join!(
        async {
            let r = locks.lock(&mut a, "right").await;
            if r.is_ok() {
                a.commit().await.unwrap();
            }
            r
        },
        async {
            let r = locks.lock(&mut b, "left").await;
            let checked = b_right.check(&mut b).await;
            if r.is_ok() {
                b.commit().await.unwrap();
            }
            (r, checked)
        }
    );
    let (b_result, b_checked) = b_result;
    let lost = |r: &Result<_, LockError>| matches!(r, Err(LockError::Lost { .. }));
    assert!(
        lost(&a_result) != lost(&b_result),
        "exactly one victim: {:?} / {:?}",
        a_result.map(|l| l.token()),
        b_result.map(|l| l.token())
    );
    if lost(&b_result) {
        assert!(
            matches!(b_checked, Err(LockError::Lost { .. })),
            "{b_checked:?}"
        );
    }
}

#[tokio::test]
async fn a_terminated_session_is_lost_and_frees_the_key() {
    let (_server, pool, locks) = setup().await;
    let mut a = pool.begin().await.unwrap();
    let held = locks.lock(&mut a, "k").await.unwrap();
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut *a)
        .await
        .unwrap();
    let ended: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
        .bind(pid)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert!(ended);
    let checked = held.check(&mut a).await.unwrap_err();
    assert!(matches!(checked, LockError::Lost { .. }), "{checked:?}");

    let mut b = pool.begin().await.unwrap();
    locks
        .lock(&mut b, "k")
        .wait(Duration::from_secs(10))
        .await
        .unwrap();
}

#[tokio::test]
async fn the_advisory_form_excludes_advisory_mode_holders() {
    let (server, pool, locks) = setup().await;
    let url = format!(
        "{}{}mode=advisory",
        server.url(),
        if server.url().contains('?') { '&' } else { '?' }
    );
    let locker = lockkit::connect(&url).await.unwrap();
    let guard = locker.lock("shared-key").await.unwrap();
    let guard_token = guard.token();

    let mut tx = pool.begin().await.unwrap();
    let refused = locks
        .lock(&mut tx, "shared-key")
        .advisory()
        .no_wait()
        .await
        .unwrap_err();
    assert!(
        matches!(refused, LockError::Contended { .. }),
        "{refused:?}"
    );
    guard.release().await.unwrap();
    let held = locks
        .lock(&mut tx, "shared-key")
        .advisory()
        .no_wait()
        .await
        .unwrap();
    assert!(held.token() > guard_token, "one counter for both");

    let busy = locker.try_lock("shared-key").await.unwrap_err();
    assert!(matches!(busy, LockError::Contended { .. }), "{busy:?}");
    tx.commit().await.unwrap();
    locker
        .try_lock("shared-key")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}

#[tokio::test]
async fn a_waiter_under_repeatable_read_or_serializable_gets_the_lock() {
    let (_server, pool, locks) = setup().await;
    for level in ["REPEATABLE READ", "SERIALIZABLE"] {
        let mut a = pool.begin().await.unwrap();
        let first = locks.lock(&mut a, "k").await.unwrap();
        let mut b = pool
            .begin_with(sqlx::AssertSqlSafe(format!(
                "BEGIN ISOLATION LEVEL {level}"
            )))
            .await
            .unwrap();
        // b's snapshot is taken before a commits.
        usable(&mut b).await;
        let (committed, second) = tokio::join!(
            async {
                // Commit once b is seen waiting for a's lock.
                wait_for_a_lock_waiter(&pool).await;
                a.commit().await
            },
            locks.lock(&mut b, "k").wait(Duration::from_secs(10))
        );
        committed.unwrap();
        let second = second.unwrap_or_else(|e| panic!("{level}: {e}"));
        assert!(second.token() > first.token());
        b.commit().await.unwrap();
    }
}

/// Waits until some session waits for a lock (bounded: 10 s).
async fn wait_for_a_lock_waiter(pool: &PgPool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let waiting: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_locks WHERE NOT granted")
            .fetch_one(pool)
            .await
            .unwrap();
        if waiting > 0 {
            return;
        }
        assert!(Instant::now() < deadline, "nobody waited for the lock");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
