//! What waiting costs those who do not wait.
//!
//! - A release wakes the waiters and observers of its own key only: on
//!   PostgreSQL through the `NOTIFY` payload in another driver (lease table and
//!   advisory mode), on MariaDB and SQLite in this process. Observers
//!   (`LockDriver::watch`) share the waiters' wake-ups, so they show it: before,
//!   every release woke every waiter of the driver, and each of them sent an
//!   attempt.
//! - On PostgreSQL, a waiter's refused attempts take no transaction id: they
//!   look before they lock the key's row, so they write nothing to the WAL. Only
//!   the first attempt, joining the waiter queue and leaving it do.
//! - On MariaDB, a refused attempt is one statement, as a grant is: a `try_lock`
//!   of a held key costs one round trip.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::driver::ChangeSignal;
use lockkit_core::{LockDriver, LockError, LockKey, Locker};
use lockkit_sql::mysql::{MySqlDriver, MySqlOptions};
use lockkit_sql::postgres::{self, PgDriver, PgOptions};
use lockkit_sql::sqlite::{SqliteDriver, SqliteOptions};
use lockkit_testkit::{MariaDb, Postgres};
use sqlx::Connection;
use tokio::time::{Instant, timeout};

/// Far longer than a release's wake-up takes anywhere here.
const WOKEN_WITHIN: Duration = Duration::from_secs(10);

fn key(name: &str) -> LockKey {
    LockKey::new(name).unwrap()
}

/// Whether `signal` has resolved, without waiting.
async fn resolved(signal: &mut ChangeSignal) -> bool {
    timeout(Duration::ZERO, signal).await.is_ok()
}

/// `holder` takes and releases a key; `watcher` (another driver of the same
/// database, or the same one) must see that key's release and no other key's.
async fn a_release_wakes_its_key_only(holder: &Locker, watcher: &dyn LockDriver) {
    // A first release, seen: the watcher's wake-ups are up (a PostgreSQL listener
    // that starts listening wakes every key once; that is behind us now).
    let mut warm_up = watcher.watch(&key("wake-warm-up")).await.unwrap();
    holder
        .lock("wake-warm-up")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    timeout(WOKEN_WITHIN, &mut warm_up)
        .await
        .expect("the first release woke nobody");

    let mut released = watcher.watch(&key("wake-released")).await.unwrap();
    let mut other = watcher.watch(&key("wake-other")).await.unwrap();
    let held = holder.lock("wake-released").await.unwrap();
    held.release().await.unwrap();

    timeout(WOKEN_WITHIN, &mut released)
        .await
        .expect("the release did not wake its key's observer");
    assert!(
        !resolved(&mut other).await,
        "a release of one key woke the observer of another"
    );
}

async fn pg(url: &str) -> Arc<PgDriver> {
    Arc::new(
        PgDriver::connect(PgOptions::from_url(url).unwrap())
            .await
            .unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_release_wakes_the_other_drivers_waiters_of_its_key_only() {
    let server = Postgres::start().await.unwrap();
    let holder = Locker::new(pg(&server.url()).await);
    let watcher = pg(&server.url()).await;
    a_release_wakes_its_key_only(&holder, &*watcher).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_advisory_release_wakes_the_other_drivers_waiters_of_its_key_only() {
    let server = Postgres::start().await.unwrap();
    let url = format!("{}?mode=advisory", server.url());
    let advisory = || async { postgres::connect(PgOptions::from_url(&url).unwrap()).await };
    let holder = Locker::new(advisory().await.unwrap());
    let watcher = advisory().await.unwrap();
    a_release_wakes_its_key_only(&holder, &*watcher).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mariadb_release_wakes_this_drivers_waiters_of_its_key_only() {
    let server = MariaDb::start().await.unwrap();
    let driver = Arc::new(
        MySqlDriver::connect(MySqlOptions::from_url(&server.url()).unwrap())
            .await
            .unwrap(),
    );
    a_release_wakes_its_key_only(&Locker::new(driver.clone()), &*driver).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_release_wakes_the_waiters_of_its_key_only_in_this_process() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("wake.db");
    let open = || async {
        Arc::new(
            SqliteDriver::connect(SqliteOptions::new(&file))
                .await
                .unwrap(),
        )
    };
    let (holder, watcher) = (open().await, open().await);
    a_release_wakes_its_key_only(&Locker::new(holder), &*watcher).await;
}

/// The server's next transaction id (asking takes one).
async fn next_transaction_id(conn: &mut sqlx::PgConnection) -> i64 {
    sqlx::query_scalar("SELECT txid_current()")
        .fetch_one(conn)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_waiters_refused_attempts_take_no_transaction_ids() {
    let server = Postgres::start().await.unwrap();
    let (holder, waiter) = (
        Locker::new(pg(&server.url()).await),
        Locker::new(pg(&server.url()).await),
    );
    // A fixed lease: no watchdog renewals, which take transaction ids of their own.
    let _held = holder
        .lock("busy")
        .lease(Duration::from_secs(60))
        .await
        .unwrap();
    let mut admin = sqlx::PgConnection::connect(&server.url()).await.unwrap();

    let before = next_transaction_id(&mut admin).await;
    let waited_from = Instant::now();
    let refused = waiter.lock("busy").wait(Duration::from_millis(1500)).await;
    let waited = waited_from.elapsed();
    let used = next_transaction_id(&mut admin).await - before - 1;

    assert!(
        matches!(refused, Err(LockError::Timeout { .. })),
        "{refused:?}"
    );
    // Polls from 2 ms doubling to 250 ms: at least six attempts after the first
    // in 1.5 s. Only the first one, a plain upsert, may lock the row; joining
    // the waiter queue right after it, and leaving it at the timeout, take one
    // id each.
    assert!(
        waited >= Duration::from_millis(1500),
        "waited only {waited:?}"
    );
    assert!(
        used <= 3,
        "{used} transaction ids for one waiter's refused attempts"
    );
}

/// The statements that read or write rows the server has run (its `Com_select`,
/// `Com_insert` and `Com_update` counters: not the connections' setup, nor
/// pings). Read on `conn`, with one `SELECT` of its own.
async fn row_statements(conn: &mut sqlx::MySqlConnection) -> i64 {
    let value: String = sqlx::query_scalar(
        "SELECT CAST(SUM(VARIABLE_VALUE) AS CHAR) FROM information_schema.GLOBAL_STATUS \
         WHERE VARIABLE_NAME IN ('COM_SELECT', 'COM_INSERT', 'COM_UPDATE')",
    )
    .fetch_one(conn)
    .await
    .unwrap();
    value.parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mariadb_refused_attempt_is_one_statement() {
    let server = MariaDb::start().await.unwrap();
    let url = server.url();
    let mysql = || async {
        Arc::new(
            MySqlDriver::connect(MySqlOptions::from_url(&url).unwrap())
                .await
                .unwrap(),
        )
    };
    let holder = Locker::new(mysql().await).with_label("holder");
    let other = Locker::new(mysql().await).with_label("other");
    // A fixed lease: no watchdog renewals, which are statements of their own.
    let held = holder
        .lock("busy")
        .lease(Duration::from_secs(60))
        .await
        .unwrap();
    let mut admin = sqlx::MySqlConnection::connect(&url).await.unwrap();
    let seen = other.inspect("busy").await.unwrap().holders;
    let before = row_statements(&mut admin).await;
    for _ in 0..10 {
        // A longer lease than the holder's and another label: a refused attempt
        // that wrote either would show.
        let refused = other
            .lock("busy")
            .ttl(Duration::from_secs(120))
            .no_wait()
            .await;
        assert!(
            matches!(refused, Err(LockError::Contended { .. })),
            "{refused:?}"
        );
    }
    let statements = row_statements(&mut admin).await - before - 1;
    assert_eq!(
        statements, 10,
        "10 refused attempts took {statements} statements"
    );
    // The holder's hold is untouched: the same token and label, and a lease
    // that only ran down.
    let after = other.inspect("busy").await.unwrap().holders;
    assert_eq!(after.len(), 1);
    assert_eq!(
        (after[0].token, &after[0].label),
        (seen[0].token, &seen[0].label)
    );
    assert!(
        after[0].remaining <= seen[0].remaining,
        "{after:?} after {seen:?}"
    );
    held.release().await.unwrap();
    other
        .try_lock("busy")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}
