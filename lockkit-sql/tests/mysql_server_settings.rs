//! MySQL/MariaDB settings that real deployments use, under which a lease must
//! mean the same (the MySQL driver's invariants M3 to M6): each session's time
//! zone, statement-based binary logging, and the connection's character set.
//! The whole conformance suite also runs on a server with hostile settings
//! (`conformance_mysql.rs`, `mysql_hostile`).
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit::{LockError, Locker};
use lockkit_sql::mysql::{self, MySqlOptions};
use lockkit_testkit::{MARIADB_HOSTILE_SETTINGS, MariaDb};
use sqlx::mysql::{MySqlConnectOptions, MySqlPoolOptions};

const TTL: Duration = Duration::from_secs(60);

/// A `Locker` whose sessions use `time_zone` (sqlx's default is `+00:00`).
async fn in_time_zone(server: &MariaDb, time_zone: &str) -> Locker {
    let url = format!(
        "{}?timezone={}",
        server.url(),
        time_zone.replace('+', "%2B")
    );
    lockkit::connect(&url).await.unwrap()
}

#[tokio::test]
async fn a_lease_holds_for_sessions_in_any_time_zone() {
    let server = MariaDb::start().await.unwrap();
    let utc = in_time_zone(&server, "+00:00").await;
    let east = in_time_zone(&server, "+09:00").await;
    let west = in_time_zone(&server, "-05:00").await;
    let held = utc.lock("k").ttl(TTL).no_wait().await.unwrap();
    for (other, zone) in [(&east, "+09:00"), (&west, "-05:00")] {
        match other.try_lock("k").await {
            Err(LockError::Contended { .. }) => {}
            other => panic!("a session at {zone} got a 60 s lease as free: {other:?}"),
        }
        let left = other.inspect("k").await.unwrap().holders[0]
            .remaining
            .unwrap();
        assert!(
            left > TTL - Duration::from_secs(10) && left <= TTL,
            "a session at {zone} sees {left:?} left of a 60 s lease"
        );
    }
    held.release().await.unwrap();
    // And the other way round: a lease taken at -05:00, seen from +09:00.
    let held = west.lock("k").ttl(TTL).no_wait().await.unwrap();
    assert!(matches!(
        east.try_lock("k").await,
        Err(LockError::Contended { .. })
    ));
    held.release().await.unwrap();
}

/// The server's own verdict: what MariaDB writes to its error log for each
/// statement that is unsafe for statement-based binary logging (a replica may
/// apply it differently: its fence counter could fall behind, and tokens repeat
/// after a failover to it).
const UNSAFE: &str = "Unsafe statement written to the binary log";

/// Waits (at most 10 s) until `count`, a `SELECT COUNT(*)`, counts a row.
async fn until_counted(admin: &sqlx::MySqlPool, count: &'static str) {
    let counted = async {
        while sqlx::query_scalar::<_, i64>(count)
            .fetch_one(admin)
            .await
            .unwrap()
            == 0
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), counted)
        .await
        .unwrap_or_else(|_| panic!("never counted a row: {count}"));
}

#[tokio::test]
async fn no_statement_is_unsafe_for_statement_based_binary_logging() {
    let server = MariaDb::start_with_settings(MARIADB_HOSTILE_SETTINGS)
        .await
        .unwrap();
    let admin = sqlx::MySqlPool::connect(&server.url()).await.unwrap();
    for url in [server.url(), format!("{}?mode=get_lock", server.url())] {
        let (a, b): (Locker, Locker) = (
            lockkit::connect(&url).await.unwrap(),
            lockkit::connect(&url).await.unwrap(),
        );
        // Exclusive holds with a waiter in another driver (the bell, and the
        // first in line's wake-up), extends, proclaim, a forced release.
        let held = a.lock("x").ttl(TTL).no_wait().await.unwrap();
        let waiter = tokio::spawn(async move {
            let g = b.lock("x").wait(Duration::from_secs(20)).await.unwrap();
            g.release().await.unwrap();
            b
        });
        if !url.contains("get_lock") {
            // The waiter asleep on the key's bell, first in line (the
            // statements that read the bell's holder are the ones at stake).
            let asleep = "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                          WHERE INFO LIKE '%SLEEP(%' AND ID <> CONNECTION_ID()";
            until_counted(&admin, asleep).await;
        }
        held.extend(TTL).await.unwrap();
        held.release().await.unwrap();
        let b = waiter.await.unwrap();
        let lead = a.election("e").campaign("v1").await.unwrap();
        let _ = lead.proclaim("v2").await;
        lead.resign().await.unwrap();
        let _forced = b.lock("y").no_wait().await.unwrap();
        let y = lockkit::LockKey::new("y".to_string()).unwrap();
        a.driver().force_release(&y).await.unwrap();
        // Shared holds and permits, where the driver has them.
        if let Ok(read) = a.read_lock("r").no_wait().await {
            read.release().await.unwrap();
        }
        let permit = a.semaphore("s", 2).try_acquire().await.unwrap();
        permit.release().await.unwrap();
        if !url.contains("get_lock") {
            // A reader queued behind a writer marks the key's row; a fair
            // writer reads its turn from the queue.
            let held = a.lock("q").ttl(TTL).no_wait().await.unwrap();
            let reader = tokio::spawn(async move {
                let r = b
                    .read_lock("q")
                    .wait(Duration::from_secs(20))
                    .await
                    .unwrap();
                r.release().await.unwrap();
            });
            let marked = "SELECT COUNT(*) FROM lockkit_locks \
                          WHERE name = 'q' AND readers_until IS NOT NULL";
            until_counted(&admin, marked).await;
            let fair = a.lock("q2").fair().no_wait().await.unwrap();
            fair.release().await.unwrap();
            held.release().await.unwrap();
            reader.await.unwrap();
        }
    }
    let log = server.error_log().unwrap();
    assert!(!log.contains(UNSAFE), "{log}");
    // The check can fail: a statement that reads a user lock while it writes
    // is logged as unsafe.
    let pool = admin;
    sqlx::query("UPDATE lockkit_locks SET fence = fence + 0 * COALESCE(IS_USED_LOCK('x'), 0)")
        .execute(&pool)
        .await
        .unwrap();
    let log = server.error_log().unwrap();
    assert!(
        log.contains(UNSAFE),
        "the control statement was not logged: {log}"
    );
}

#[tokio::test]
async fn a_pool_that_does_not_talk_utf8mb4_is_refused() {
    let server = MariaDb::start().await.unwrap();
    let options: MySqlConnectOptions = server.url().parse().unwrap();
    let pool = MySqlPoolOptions::new()
        .connect_with(options.charset("latin1"))
        .await
        .unwrap();
    let refused = mysql::from_pool(pool, MySqlOptions::default()).await;
    match refused {
        Err(LockError::Config(why)) => assert!(why.contains("utf8mb4"), "{why}"),
        other => panic!("expected a Config error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_pool_at_read_uncommitted_is_refused_and_read_committed_is_taken() {
    let server = MariaDb::start().await.unwrap();
    let options: MySqlConnectOptions = server.url().parse().unwrap();
    for (level, refused) in [("READ UNCOMMITTED", true), ("READ COMMITTED", false)] {
        let set = format!("SET SESSION TRANSACTION ISOLATION LEVEL {level}");
        let pool = MySqlPoolOptions::new()
            .after_connect(move |conn, _| {
                let set = set.clone();
                Box::pin(async move {
                    sqlx::query(sqlx::AssertSqlSafe(set)).execute(conn).await?;
                    Ok(())
                })
            })
            .connect_with(options.clone())
            .await
            .unwrap();
        match mysql::from_pool(pool, MySqlOptions::default()).await {
            Err(LockError::Config(why)) if refused => {
                assert!(why.contains("READ-UNCOMMITTED"), "{why}");
                assert!(why.contains("READ-COMMITTED or stronger"), "{why}");
            }
            Ok(driver) if !refused => {
                let locker = Locker::new(driver);
                locker.try_lock("k").await.unwrap().release().await.unwrap();
            }
            other => panic!("{level}: got {:?}", other.map(|_| "a driver")),
        }
    }
}

#[tokio::test]
async fn a_password_with_url_characters_reaches_the_server_whole() {
    let server = MariaDb::start().await.unwrap();
    let admin = sqlx::MySqlPool::connect(&server.url()).await.unwrap();
    for statement in [
        "CREATE USER 'app'@'127.0.0.1' IDENTIFIED BY 'p@ss/w:rd?#'",
        "GRANT ALL ON lockkit.* TO 'app'@'127.0.0.1'",
    ] {
        sqlx::query(statement).execute(&admin).await.unwrap();
    }
    // Written as it is (lockkit reads the userinfo up to the last `@`; `?` and
    // `#` must be encoded), and all percent-encoded.
    let port = server.url().split(':').nth(2).unwrap().to_owned();
    for password in ["p@ss/w:rd%3F%23", "p%40ss%2Fw%3Ard%3F%23"] {
        let url = format!("mysql://app:{password}@127.0.0.1:{port}");
        let locker = lockkit::connect(&url).await.unwrap();
        locker.try_lock("k").await.unwrap().release().await.unwrap();
    }
}
