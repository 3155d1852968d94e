//! A waiting acquire outlives a restart of the database server: the connection
//! errors it meets while the server is down are transient, and once the server
//! is back it is granted within its wait, with a token above the last holder's.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::Locker;
use lockkit_sql::mysql::{MySqlDriver, MySqlOptions};
use lockkit_testkit::MariaDb;
use sqlx::MySqlPool;
use tokio::time::{Instant, sleep, timeout};

/// The holder's lease: it ends soon after the server dies (its renewals fail).
const TTL: Duration = Duration::from_millis(800);

async fn locker(url: &str) -> Locker {
    let driver = MySqlDriver::connect(MySqlOptions::from_url(url).unwrap())
        .await
        .unwrap();
    Locker::new(Arc::new(driver))
}

/// Whether some session holds the wake-up bell of `key` (the first waiter in
/// line takes it while it waits).
async fn bell_taken(admin: &MySqlPool, key: &str) -> bool {
    let holder: Option<i64> = sqlx::query_scalar(
        "SELECT IS_USED_LOCK(SHA1(CONCAT('lockkit-wake:', DATABASE(), '.', ?)))",
    )
    .bind(format!("lockkit_locks:{key}"))
    .fetch_one(admin)
    .await
    .unwrap();
    holder.is_some()
}

/// The waiter is first in line, on the bell's connection, when MariaDB is killed:
/// that connection fails under its next attempt. It keeps waiting through the
/// restart and takes the lock once the holder's hold has ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mariadb_waiter_on_the_bell_is_granted_after_a_restart() {
    const KEY: &str = "orders/restart";
    let mut db = MariaDb::start().await.unwrap();
    let url = db.url();
    let admin = MySqlPool::connect(&url).await.unwrap();
    let (holder, waiter) = (locker(&url).await, locker(&url).await);
    let held = holder.lock(KEY).ttl(TTL).no_wait().await.unwrap();
    let first = held.token();
    let waiting = tokio::spawn(async move {
        waiter
            .lock(KEY)
            .ttl(Duration::from_secs(5))
            .wait(Duration::from_secs(60))
            .await
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while !bell_taken(&admin, KEY).await {
        assert!(Instant::now() < deadline, "the waiter never took the bell");
        sleep(Duration::from_millis(10)).await;
    }
    admin.close().await;

    db.kill();
    // The holder is gone with the server (its watchdog would renew the lease
    // once the server is back): the lock frees at its lease's end at the latest.
    drop((held, holder));
    db.restart().await.unwrap();
    let granted = timeout(Duration::from_secs(60), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        granted.token() > first,
        "token {} after the restart, {first} before",
        granted.token()
    );
    granted.release().await.unwrap();
}
