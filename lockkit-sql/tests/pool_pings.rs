//! A pooled connection is pinged before use only after it sat idle (1 s): lock
//! and release in steady use pay no ping before their statements, and a
//! connection that died while idle is replaced before anything runs on it (a real
//! MariaDB; the pool logic is shared with PostgreSQL).
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::Locker;
use lockkit_sql::mysql::{MySqlDriver, MySqlOptions};
use lockkit_testkit::MariaDb;
use sqlx::{Connection, MySqlConnection, Row};

/// Long enough that no renewal runs during a test.
const TTL: Duration = Duration::from_secs(60);
/// Past the pool's idle threshold (1 s) with a margin.
const IDLE: Duration = Duration::from_millis(1300);
const PAIRS: i64 = 50;

async fn locker(url: &str) -> Locker {
    let driver = MySqlDriver::connect(MySqlOptions::from_url(url).unwrap())
        .await
        .unwrap();
    Locker::new(Arc::new(driver))
}

/// Pings the server has answered: MariaDB counts `COM_PING` in
/// `Com_admin_commands`. Read on a connection of its own, outside any pool.
async fn pings(admin: &mut MySqlConnection) -> i64 {
    let row = sqlx::query("SHOW GLOBAL STATUS LIKE 'Com_admin_commands'")
        .fetch_one(admin)
        .await
        .unwrap();
    row.get::<String, _>(1).parse().unwrap()
}

async fn lock_and_release(locker: &Locker, key: &str) {
    let guard = locker.lock(key).ttl(TTL).no_wait().await.unwrap();
    guard.release().await.unwrap();
}

#[tokio::test]
async fn back_to_back_pairs_send_no_ping_before_their_statements() {
    let db = MariaDb::start().await.unwrap();
    let mut admin = MySqlConnection::connect(&db.url()).await.unwrap();
    let locker = locker(&db.url()).await;
    lock_and_release(&locker, "stock/1").await;

    let before = pings(&mut admin).await;
    for _ in 0..PAIRS {
        lock_and_release(&locker, "stock/1").await;
    }
    let sent = pings(&mut admin).await - before;
    // sqlx pings each connection it takes back: one per statement, two per
    // pair. A ping before each statement as well would make it four.
    assert!(
        sent <= 2 * PAIRS + 2,
        "{sent} pings for {PAIRS} lock+release pairs"
    );
}

#[tokio::test]
async fn a_connection_killed_while_idle_is_replaced_before_use() {
    let db = MariaDb::start().await.unwrap();
    let mut admin = MySqlConnection::connect(&db.url()).await.unwrap();
    let locker = locker(&db.url()).await;
    let guard = locker.lock("stock/2").ttl(TTL).no_wait().await.unwrap();

    // The pool's connection sits idle past the threshold (the state under test),
    // then the server drops every connection but the admin's.
    tokio::time::sleep(IDLE).await;
    let others: Vec<i64> = sqlx::query_scalar(
        "SELECT ID FROM information_schema.PROCESSLIST \
         WHERE ID <> CONNECTION_ID() AND COMMAND <> 'Daemon'",
    )
    .fetch_all(&mut admin)
    .await
    .unwrap();
    assert!(!others.is_empty(), "the locker holds no connection");
    for id in others {
        sqlx::query(sqlx::AssertSqlSafe(format!("KILL CONNECTION {id}")))
            .execute(&mut admin)
            .await
            .unwrap();
    }

    // The release runs on a new connection: the ping found the dead one.
    guard.release().await.unwrap();
    lock_and_release(&locker, "stock/2").await;
}
