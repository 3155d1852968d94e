//! The waiter first in line, behind a holder with no bell to ring: it sleeps on
//! the bell's connection, and every kind of release wakes it with `KILL QUERY`.

use std::time::Duration;

use lockkit_core::{LockError, LockGuard};
use sqlx::{AssertSqlSafe, MySqlPool};
use tokio::task::JoinHandle;
use tokio::time::{Instant, timeout};

use super::{
    KEY, LONG, TTL, attempts, bell_holder, bell_taken, first_in_line_waiter, locker, status, until,
    waiting,
};
use lockkit_testkit::MariaDb;

/// Whether connection `id` has been sleeping (`SLEEP`) for less than `ms`.
async fn sleeping_for_less_than(admin: &MySqlPool, id: i64, ms: u32) -> bool {
    let n: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
         WHERE ID = ? AND STATE = 'User sleep' AND TIME_MS < ?",
    )
    .bind(id)
    .bind(ms)
    .fetch_one(admin)
    .await
    .unwrap();
    n > 0
}

/// A lone waiter behind a holder that took its lock without waiting (so has no
/// bell to ring) sleeps on the bell's connection, attempting about every 250 ms
/// rather than every 10 ms, and the holder's release wakes it at once: it ends
/// the sleep with `KILL QUERY`, long before the sleep would have ended.
#[tokio::test]
async fn a_lone_waiter_is_woken_by_a_release_without_a_bell() {
    let (_db, admin, held, waited) = first_in_line_waiter().await;

    // Not polling: a 10 ms poll would attempt about 60 times in this window.
    let before = attempts(&admin).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let made = attempts(&admin).await - before;
    assert!(made <= 5, "the waiter attempted {made} times in 600 ms");

    a_release_wakes_the_sleeper(&admin, waited, || async {
        held.release().await.unwrap();
    })
    .await;
}

/// A wake-up that lands on the first in line's attempt, not on its sleep (here
/// the attempt waits for a row lock, as it would behind another contender),
/// ends that attempt instead: it rolls back, and the waiter attempts again and
/// keeps waiting, to be granted at the release.
#[tokio::test]
async fn a_wake_up_that_lands_on_an_attempt_does_not_fail_the_wait() {
    let (_db, admin, held, waited) = first_in_line_waiter().await;
    let sleeper = bell_holder(&admin).await.unwrap();
    let kill = || async {
        sqlx::raw_sql(AssertSqlSafe(format!("KILL QUERY {sleeper}")))
            .execute(&admin)
            .await
            .unwrap();
    };

    // The key row locked: once woken, the waiter's attempt waits for it, and
    // the next wake-up lands on that attempt, not on a sleep.
    let mut row_lock = admin.begin().await.unwrap();
    sqlx::query("SELECT fence FROM lockkit_locks WHERE name = ? FOR UPDATE")
        .bind(KEY)
        .fetch_one(&mut *row_lock)
        .await
        .unwrap();
    for _ in 0..10 {
        kill().await;
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!waited.is_finished(), "the wait ended: {:?}", waited.await);
    }
    row_lock.commit().await.unwrap();
    assert!(!waited.is_finished(), "the wait ended: {:?}", waited.await);
    held.release().await.unwrap();
    let granted = timeout(LONG, waited).await.unwrap().unwrap().unwrap();
    granted.release().await.unwrap();
}

/// Waits until the first in line on `KEY` begins a sleep (so that it has at
/// least 220 ms of it left), runs `release`, and asserts that the waiter is
/// granted sooner than that sleep would end: the release woke it.
async fn a_release_wakes_the_sleeper<F, Fut>(
    admin: &MySqlPool,
    waited: JoinHandle<Result<LockGuard, LockError>>,
    release: F,
) where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    until("the waiter takes the bell", || bell_taken(admin)).await;
    let sleeper = bell_holder(admin).await.unwrap();
    until("a sleep begins", || {
        sleeping_for_less_than(admin, sleeper, 30)
    })
    .await;
    let kills = status(admin, "Com_kill").await;
    let released = Instant::now();
    release().await;
    let granted = timeout(LONG, waited).await.unwrap().unwrap().unwrap();
    let took = released.elapsed();
    assert!(
        took < Duration::from_millis(100),
        "granted {took:?} after the release: the sleep ran out instead"
    );
    assert_eq!(
        status(admin, "Com_kill").await - kills,
        1,
        "no wake-up sent"
    );
    granted.release().await.unwrap();
}

/// The last read hold's release, and a forced release (`lockkit break`), wake the
/// writer first in line as an exclusive release does.
#[tokio::test]
async fn shared_and_forced_releases_wake_the_first_in_line() {
    let db = MariaDb::start().await.unwrap();
    let url = db.url();
    let admin = MySqlPool::connect(&url).await.unwrap();
    let (reader, writer) = (locker(&url).await, locker(&url).await);

    let read = reader.read_lock(KEY).ttl(TTL).no_wait().await.unwrap();
    let waited = waiting(&writer, LONG);
    a_release_wakes_the_sleeper(&admin, waited, || async {
        read.release().await.unwrap();
    })
    .await;

    let held = reader.lock(KEY).ttl(TTL).no_wait().await.unwrap();
    let waited = waiting(&writer, LONG);
    a_release_wakes_the_sleeper(&admin, waited, || async {
        let key = lockkit_core::LockKey::new(KEY).unwrap();
        assert!(reader.driver().force_release(&key).await.unwrap());
    })
    .await;
    drop(held);
}
