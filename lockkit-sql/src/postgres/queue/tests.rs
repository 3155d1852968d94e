#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Waker};

use std::time::Duration;

use lockkit_testkit::Postgres;
use sqlx::postgres::PgListener;
use sqlx::{Connection, PgConnection};
use tokio::sync::Notify;

use lockkit_core::{AcquireRequest, LockKey, OwnerId, Wait};

use super::super::leases::PgLeases;
use super::super::take::Take;
use super::super::{PgDriver, PgOptions};
use super::{Dequeue, Wakeups};

/// A wake-up armed now, so that one that comes before it is polled counts.
fn armed(notify: Arc<Notify>) -> impl Future<Output = ()> + Unpin {
    let mut woken = Box::pin(notify.notified_owned());
    woken.as_mut().enable();
    woken
}

/// Whether `woken` has been woken.
fn rung(mut woken: impl Future<Output = ()> + Unpin) -> bool {
    Pin::new(&mut woken)
        .poll(&mut Context::from_waker(Waker::noop()))
        .is_ready()
}

#[test]
fn a_payload_naming_a_waiter_wakes_it_and_the_observers_only() {
    let wakeups = Wakeups::default();
    let observer = armed(wakeups.all.notify("stock"));
    let first = armed(wakeups.named.notify("a1"));
    let second = armed(wakeups.named.notify("b2"));
    let queued_behind = armed(wakeups.queued.notify("stock"));

    wakeups.route("stock\u{1f}a1");

    assert!(rung(observer));
    assert!(rung(first));
    assert!(!rung(second));
    assert!(!rung(queued_behind));
}

#[test]
fn a_payload_naming_no_waiter_wakes_every_waiter_of_its_key() {
    let wakeups = Wakeups::default();
    let observer = armed(wakeups.all.notify("stock"));
    let queued = armed(wakeups.queued.notify("stock"));
    let elsewhere = armed(wakeups.queued.notify("other"));
    let named = armed(wakeups.named.notify("a1"));

    wakeups.route("stock");

    assert!(rung(observer));
    assert!(rung(queued));
    assert!(!rung(elsewhere));
    assert!(!rung(named));
}

#[test]
fn waking_all_wakes_every_waiter_and_observer() {
    let wakeups = Wakeups::default();
    let named = armed(wakeups.named.notify("a1"));
    let queued = armed(wakeups.queued.notify("stock"));
    let observer = armed(wakeups.all.notify("other"));

    wakeups.wake_all();

    assert!(rung(named));
    assert!(rung(queued));
    assert!(rung(observer));
}

/// Adds a waiter row for `stock`, `since` and `expires` relative to now.
async fn waiter_row(admin: &mut PgConnection, waiter: &str, since: &str, expires: &str) {
    sqlx::query(
        "INSERT INTO lockkit_locks_waiters (name, waiter, since, expires_at) \
         VALUES ('stock', $1, now() + $2::interval, now() + $3::interval)",
    )
    .bind(waiter)
    .bind(since)
    .bind(expires)
    .execute(admin)
    .await
    .unwrap();
}

/// "stock", held by `owner` for an hour.
async fn held_by(admin: &mut PgConnection, owner: &str) {
    sqlx::query(
        "INSERT INTO lockkit_locks (name, owner, fence, expires_at) \
         VALUES ('stock', $1, 1, now() + interval '1 hour')",
    )
    .bind(owner)
    .execute(admin)
    .await
    .unwrap();
}

/// Notifies 'after' on `channel`, after everything before it: a listener that
/// receives it first heard nothing before it.
async fn mark(admin: &mut PgConnection, channel: &str) {
    sqlx::query("SELECT pg_notify($1, 'after')")
        .bind(channel)
        .execute(admin)
        .await
        .unwrap();
}

fn leaving(leases: &PgLeases, waiter: &str) -> Dequeue {
    Dequeue {
        pool: leases.pool.clone(),
        statement: leases.statements.dequeue.clone(),
        key: "stock".into(),
        waiter: waiter.into(),
        channel: leases.statements.channel.clone(),
        timeout: leases.timeout,
    }
}

async fn next_payload(listener: &mut PgListener) -> String {
    let note = tokio::time::timeout(Duration::from_secs(10), listener.recv()).await;
    note.unwrap().unwrap().payload().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_leaving_a_free_key_wakes_the_next_one_and_a_held_key_nobody() {
    let server = Postgres::start().await.unwrap();
    let driver = PgDriver::connect(PgOptions::from_url(&server.url()).unwrap())
        .await
        .unwrap();
    let leases = driver.backend();
    let mut admin = PgConnection::connect(&server.url()).await.unwrap();
    waiter_row(&mut admin, "dead", "-3 hours", "-1 second").await;
    waiter_row(&mut admin, "a", "-2 hours", "1 hour").await;
    waiter_row(&mut admin, "b", "-1 hour", "1 hour").await;
    let mut listener = PgListener::connect(&server.url()).await.unwrap();
    listener.listen(&leases.statements.channel).await.unwrap();

    // "a" was named by a release it will not answer; the key is free.
    leaving(leases, "a").run().await;

    assert_eq!(next_payload(&mut listener).await, "stock\u{1f}b");
    let left: Vec<String> = sqlx::query_scalar("SELECT waiter FROM lockkit_locks_waiters")
        .fetch_all(&mut admin)
        .await
        .unwrap();
    assert_eq!(left, ["b"], "the expired row is swept");

    held_by(&mut admin, "someone").await;
    leaving(leases, "b").run().await;
    mark(&mut admin, &leases.statements.channel).await;

    // A held key: its release will wake the next waiter.
    assert_eq!(next_payload(&mut listener).await, "after");
}

/// Connections that listen.
const LISTENING: &str = "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %'";
/// Statements that wait for a lock.
const BLOCKED: &str = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'";

/// Waits until the query `count` counts `n`.
async fn until_counted(admin: &mut PgConnection, count: &'static str, n: i64) {
    let admin = tokio::sync::Mutex::new(admin);
    lockkit_conformance::until(
        &format!("{count} = {n}"),
        Duration::from_secs(10),
        || async {
            let counted: i64 = sqlx::query_scalar(count)
                .fetch_one(&mut **admin.lock().await)
                .await
                .unwrap();
            counted == n
        },
    )
    .await
    .unwrap();
}

/// The race a release that notifies only while someone waits must not lose: a
/// waiter joins the queue on a snapshot that shows the key held, while the
/// release that frees it commits first, sees no `wake_until`, and notifies no
/// one. The join's push re-reads the key row, finds it free, and wakes its
/// waiter itself. Ordered by a row lock the test holds: the release queues on
/// it first, then the join.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_that_passed_a_joining_waiter_unnotified_still_wakes_it() {
    let server = Postgres::start().await.unwrap();
    let driver = PgDriver::connect(PgOptions::from_url(&server.url()).unwrap())
        .await
        .unwrap();
    let mut admin = PgConnection::connect(&server.url()).await.unwrap();
    held_by(&mut admin, "holder").await;
    let channel = driver.backend().statements.channel.clone();
    let mut listener = PgListener::connect(&server.url()).await.unwrap();
    listener.listen(&channel).await.unwrap();
    let mut gate = PgConnection::connect(&server.url()).await.unwrap();
    sqlx::raw_sql("BEGIN; SELECT 1 FROM lockkit_locks WHERE name = 'stock' FOR UPDATE")
        .execute(&mut gate)
        .await
        .unwrap();

    let releasing = {
        let (pool, statement) = (
            driver.backend().pool.clone(),
            driver.backend().statements.release.clone(),
        );
        let channel = channel.clone();
        tokio::spawn(async move {
            sqlx::query(sqlx::AssertSqlSafe(&*statement))
                .bind("stock")
                .bind("holder")
                .bind(channel)
                .fetch_optional(&pool)
                .await
        })
    };
    until_counted(&mut admin, BLOCKED, 1).await;
    // The driver's listener wakes every waiter once as it starts: before arming.
    until_counted(&mut admin, LISTENING, 2).await;
    let woken = armed(driver.backend().wakeups.named.notify("w1"));
    let joining = {
        let driver = driver.clone();
        tokio::spawn(async move {
            let key = LockKey::new("stock").unwrap();
            let req =
                AcquireRequest::new(key, OwnerId::new(), Duration::from_secs(60), Wait::NoWait);
            driver.backend().take(&req, Take::Join("w1")).await
        })
    };
    until_counted(&mut admin, BLOCKED, 2).await;
    sqlx::raw_sql("COMMIT").execute(&mut gate).await.unwrap();

    assert!(
        releasing.await.unwrap().unwrap().is_some(),
        "the release freed the key"
    );
    let joined = joining.await.unwrap().unwrap();
    assert!(joined.is_none(), "the join's snapshot showed the key held");
    assert!(rung(woken), "the join woke its waiter: the key is free");
    mark(&mut admin, &channel).await;
    assert_eq!(
        next_payload(&mut listener).await,
        "after",
        "the release notified"
    );
}
