//! MySQL/MariaDB waiters in other processes are woken, not polled: each waits in
//! `GET_LOCK` on the key's bell, which the holder rings at its release (a real
//! MariaDB; each `Locker` its own driver and pools, as another process's would be),
//! and a waiter on the bell keeps waiting through a server restart. The waiter
//! first in line, which holds the bell behind a holder that has none, is in
//! `first_in_line.rs`.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::{LockError, LockGuard, Locker};
use lockkit_sql::mysql::{MySqlDriver, MySqlOptions};
use lockkit_testkit::{LogCapture, MariaDb};
use sqlx::MySqlPool;
use tokio::task::JoinHandle;
use tokio::time::timeout;

mod first_in_line;

const KEY: &str = "stock/42";
/// Long enough that no renewal runs during a test.
const TTL: Duration = Duration::from_secs(60);
const LONG: Duration = Duration::from_secs(30);

async fn locker(url: &str) -> Locker {
    let driver = MySqlDriver::connect(MySqlOptions::from_url(url).unwrap())
        .await
        .unwrap();
    Locker::new(Arc::new(driver))
}

/// How many sessions wait in `GET_LOCK`.
async fn blocked_on_bells(admin: &MySqlPool) -> i64 {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = 'User lock'",
    )
    .fetch_one(admin)
    .await
    .unwrap()
}

/// The connection that holds the bell of `KEY`, if any.
async fn bell_holder(admin: &MySqlPool) -> Option<i64> {
    sqlx::query_scalar("SELECT IS_USED_LOCK(SHA1(CONCAT('lockkit-wake:', DATABASE(), '.', ?)))")
        .bind(format!("lockkit_locks:{KEY}"))
        .fetch_one(admin)
        .await
        .unwrap()
}

/// Whether some session holds the bell of `KEY`.
async fn bell_taken(admin: &MySqlPool) -> bool {
    bell_holder(admin).await.is_some()
}

/// INSERT and UPDATE statements the server has run: every exclusive acquire
/// attempt runs one or two (`INSERT … ON DUPLICATE KEY UPDATE`; a waiter a
/// release woke first tries an `UPDATE` of the free row). Nothing else updates
/// while a test holds its key: the watchdog's first renewal comes a third of
/// [`TTL`] in, after every test here has ended.
async fn attempts(admin: &MySqlPool) -> i64 {
    status(admin, "Com_insert").await + status(admin, "Com_update").await
}

/// A global status counter (`Com_kill`, …).
async fn status(admin: &MySqlPool, name: &str) -> i64 {
    let value: String = sqlx::query_scalar(
        "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = ?",
    )
    .bind(name)
    .fetch_one(admin)
    .await
    .unwrap();
    value.parse().unwrap()
}

/// Waits (for at most 10 s) until `check` holds.
async fn until<F, Fut>(what: &str, check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    lockkit_conformance::until(what, Duration::from_secs(10), check)
        .await
        .unwrap();
}

fn waiting(locker: &Locker, wait: Duration) -> JoinHandle<Result<LockGuard, LockError>> {
    let locker = locker.clone();
    tokio::spawn(async move { locker.lock(KEY).ttl(TTL).wait(wait).await })
}

/// A server, an admin pool, a holder that took its lock without waiting (so has
/// no bell), and a waiter behind it that has taken the free bell: first in line.
async fn first_in_line_waiter() -> (
    MariaDb,
    MySqlPool,
    LockGuard,
    JoinHandle<Result<LockGuard, LockError>>,
) {
    let db = MariaDb::start().await.unwrap();
    let url = db.url();
    let admin = MySqlPool::connect(&url).await.unwrap();
    let (holder, waiter) = (locker(&url).await, locker(&url).await);
    let held = holder.lock(KEY).ttl(TTL).no_wait().await.unwrap();
    let waited = waiting(&waiter, LONG);
    until("the waiter takes the bell", || bell_taken(&admin)).await;
    (db, admin, held, waited)
}

/// A server, an admin pool, a holder that waited for its lock (so holds the
/// bell), and two more lockers: the first in line ([`first_in_line_waiter`]),
/// once the holder before it released.
async fn holder_with_a_bell() -> (MariaDb, MySqlPool, LockGuard, Locker, Locker) {
    let (db, admin, held, a) = first_in_line_waiter().await;
    held.release().await.unwrap();
    let a = timeout(LONG, a).await.unwrap().unwrap().unwrap();
    let url = db.url();
    let (third, fourth) = (locker(&url).await, locker(&url).await);
    (db, admin, a, third, fourth)
}

/// A holder that got its lock by waiting keeps the bell: while it holds, the
/// waiters behind it block in `GET_LOCK` and send no statement at all; its
/// release wakes the first of them, whose release wakes the next, in order.
#[tokio::test]
async fn waiters_block_on_the_bell_and_are_woken_in_order() {
    let (_db, admin, a, third, fourth) = holder_with_a_bell().await;

    // `a` waited: it holds the bell. The next waiters block behind it, in order.
    let b = waiting(&third, LONG);
    until("one waiter blocks", || async {
        blocked_on_bells(&admin).await == 1
    })
    .await;
    let c = waiting(&fourth, LONG);
    until("two waiters block", || async {
        blocked_on_bells(&admin).await == 2
    })
    .await;

    // Blocked waiters attempt nothing (a polling waiter attempts every 2 to
    // 100 ms: at least four times each in this window).
    let before = attempts(&admin).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(blocked_on_bells(&admin).await, 2);
    assert_eq!(attempts(&admin).await - before, 0, "blocked waiters polled");

    let a_token = a.token();
    a.release().await.unwrap();
    let b = timeout(LONG, b).await.unwrap().unwrap().unwrap();
    assert!(
        !c.is_finished(),
        "the second waiter was granted before the first"
    );
    let b_token = b.token();
    b.release().await.unwrap();
    let c = timeout(LONG, c).await.unwrap().unwrap().unwrap();
    assert!(a_token < b_token && b_token < c.token());
    c.release().await.unwrap();
    assert!(
        !bell_taken(&admin).await,
        "a released lock left its bell rung-less"
    );
}

/// A wait on the bell is not a slow statement: a waiter blocked past sqlx's 1 s
/// slow-statement threshold logs no warning (one per wait, every 2 s of every
/// waiter, before this was fixed). A slow statement of the test's own, run in
/// the meantime, shows that the capture sees sqlx's warnings.
#[test]
fn a_long_wait_on_the_bell_logs_no_warning() {
    let logs = LogCapture::start();
    logs.block_on(async {
        let (_db, admin, a, third, _) = holder_with_a_bell().await;
        let b = waiting(&third, LONG);
        until("the waiter blocks", || async {
            blocked_on_bells(&admin).await == 1
        })
        .await;
        // The condition under test: blocked for longer than the threshold.
        let (_, control) = tokio::join!(
            tokio::time::sleep(Duration::from_millis(1500)),
            sqlx::query("SELECT SLEEP(1.2) AS slow_control").execute(&admin),
        );
        control.unwrap();
        assert_eq!(
            blocked_on_bells(&admin).await,
            1,
            "the waiter stopped waiting"
        );
        a.release().await.unwrap();
        let b = timeout(LONG, b).await.unwrap().unwrap().unwrap();
        b.release().await.unwrap();
    })
    .unwrap();
    let control = logs.lines("slow_control");
    assert!(
        matches!(control.as_slice(), [l] if l.contains("WARN")),
        "the control's slow statement: {control:#?}"
    );
    let bell = logs.lines("GET_LOCK");
    assert!(bell.is_empty(), "the wait logged: {bell:#?}");
}

/// A waiter that gives up with the bell passes it on: the next waiter takes it
/// and gets the lock as soon as the holder releases.
#[tokio::test]
async fn a_waiter_that_gives_up_passes_the_bell_on() {
    let db = MariaDb::start().await.unwrap();
    let url = db.url();
    let admin = MySqlPool::connect(&url).await.unwrap();
    let (holder, quitter, patient) = (locker(&url).await, locker(&url).await, locker(&url).await);

    let held = holder.lock(KEY).ttl(TTL).no_wait().await.unwrap();
    let quits = waiting(&quitter, Duration::from_millis(600));
    until("the quitter takes the bell", || bell_taken(&admin)).await;
    let stays = waiting(&patient, LONG);
    until("the patient waiter blocks", || async {
        blocked_on_bells(&admin).await == 1
    })
    .await;

    let quit = timeout(LONG, quits).await.unwrap().unwrap();
    assert!(matches!(quit, Err(LockError::Timeout { .. })), "{quit:?}");
    until("the patient waiter takes the bell", || async {
        blocked_on_bells(&admin).await == 0 && bell_taken(&admin).await
    })
    .await;
    held.release().await.unwrap();
    let got = timeout(LONG, stays).await.unwrap().unwrap().unwrap();
    got.release().await.unwrap();
}

/// A waiter cancelled while it blocks in `GET_LOCK` leaves the queue: its
/// connection is closed, and the waiter behind it is woken by the next release.
#[tokio::test]
async fn a_cancelled_waiter_does_not_keep_the_bell() {
    let (_db, admin, a, third, fourth) = holder_with_a_bell().await;
    let cancelled = waiting(&third, LONG);
    until("one waiter blocks", || async {
        blocked_on_bells(&admin).await == 1
    })
    .await;
    let behind = waiting(&fourth, Duration::from_millis(1500));
    until("two waiters block", || async {
        blocked_on_bells(&admin).await == 2
    })
    .await;
    cancelled.abort();
    assert!(cancelled.await.unwrap_err().is_cancelled());

    // Within the second waiter's 1.5 s: a bell kept by the cancelled waiter's
    // session would make it time out.
    a.release().await.unwrap();
    let got = timeout(LONG, behind).await.unwrap().unwrap().unwrap();
    got.release().await.unwrap();
}

/// A waiter first in line, on the bell's connection, when MariaDB is killed: that
/// connection fails under its sleep or its next attempt, which is transient. It keeps waiting
/// through the restart and is granted once the holder's hold has ended, with a
/// higher token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_on_the_bell_is_granted_after_a_server_restart() {
    let mut db = MariaDb::start().await.unwrap();
    let url = db.url();
    let admin = MySqlPool::connect(&url).await.unwrap();
    let (holder, waiter) = (locker(&url).await, locker(&url).await);
    // A short lease: once dropped, the holder's lock frees within it.
    let held = holder
        .lock(KEY)
        .ttl(Duration::from_millis(800))
        .no_wait()
        .await
        .unwrap();
    let first = held.token();
    let waited = waiting(&waiter, LONG);
    until("the waiter takes the bell", || bell_taken(&admin)).await;
    admin.close().await;

    db.kill();
    // The holder goes with the server (else its watchdog would renew the lease
    // once the server is back): its lock frees at its release or lease's end.
    drop((held, holder));
    db.restart().await.unwrap();
    let granted = timeout(LONG, waited).await.unwrap().unwrap().unwrap();
    assert!(
        granted.token() > first,
        "token {} after the restart, {first} before",
        granted.token()
    );
    granted.release().await.unwrap();
}
