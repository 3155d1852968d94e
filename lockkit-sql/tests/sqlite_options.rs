//! SQLite URLs and settings: bad input gets a typed error a person can act on.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::{LockError, Locker};
use lockkit_sql::sqlite::{SqliteDriver, SqliteOptions};
use tokio::time::Instant;

#[tokio::test]
async fn missing_directory_is_a_config_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/locks.db");
    let err = SqliteDriver::connect(SqliteOptions::new(&missing))
        .await
        .unwrap_err();
    let LockError::Config(message) = &err else {
        panic!("expected Config, got {err:?}");
    };
    assert!(message.contains("no/such/dir"), "{message}");
    assert!(message.contains("does not exist"), "{message}");
}

#[tokio::test]
async fn a_directory_path_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = SqliteDriver::connect(SqliteOptions::new(dir.path()))
        .await
        .unwrap_err();
    assert!(matches!(err, LockError::Config(_)), "{err:?}");
}

#[test]
fn malformed_urls_are_invalid_url_errors() {
    for url in [
        "sqlite://",
        "sqlite:",
        "postgres://x",
        "sqlite://x.db?tabel=t",
        "sqlite://x.db?busy_timeout_ms=soon",
    ] {
        match SqliteOptions::from_url(url) {
            Err(LockError::InvalidUrl { reason, .. }) => assert!(!reason.is_empty()),
            other => panic!("{url}: expected InvalidUrl, got {other:?}"),
        }
    }
}

#[test]
fn table_names_must_be_plain_identifiers() {
    for bad in ["", "1locks", "locks; DROP TABLE x", "a-b", &"t".repeat(64)] {
        assert!(
            matches!(
                SqliteOptions::memory().table(bad),
                Err(LockError::Config(_))
            ),
            "{bad:?} accepted"
        );
    }
    assert!(SqliteOptions::memory().table("app_locks_2").is_ok());
}

#[test]
fn url_forms_parse() {
    let abs = SqliteOptions::from_url("sqlite:///tmp/a.db").unwrap();
    assert_eq!(abs.path().unwrap().to_str(), Some("/tmp/a.db"));
    let rel = SqliteOptions::from_url("sqlite://a.db?table=t1&busy_timeout_ms=10").unwrap();
    assert_eq!(rel.path().unwrap().to_str(), Some("a.db"));
    assert_eq!(rel.table_name(), "t1");
    assert!(
        SqliteOptions::from_url("sqlite::memory:")
            .unwrap()
            .is_memory()
    );
}

#[tokio::test]
async fn custom_table_isolates_locks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locks.db");
    let a = SqliteDriver::connect(SqliteOptions::new(&path).table("team_a").unwrap())
        .await
        .unwrap();
    let b = SqliteDriver::connect(SqliteOptions::new(&path).table("team_b").unwrap())
        .await
        .unwrap();
    let (a, b) = (Locker::new(Arc::new(a)), Locker::new(Arc::new(b)));
    let ga = a.try_lock("shared-name").await.unwrap();
    let gb = b.try_lock("shared-name").await.unwrap();
    ga.release().await.unwrap();
    gb.release().await.unwrap();
}

#[tokio::test]
async fn watchdog_renews_many_locks_in_one_statement_round() {
    // 200 holds renewed by one watchdog: all still held after 3×TTL.
    let driver = Arc::new(
        SqliteDriver::connect(SqliteOptions::memory())
            .await
            .unwrap(),
    );
    let locker = Locker::new(driver.clone());
    let ttl = Duration::from_millis(600);
    let mut guards = Vec::new();
    for i in 0..200 {
        guards.push(
            locker
                .lock(format!("bulk/{i}"))
                .ttl(ttl)
                .no_wait()
                .await
                .unwrap(),
        );
    }
    // Wait until the watchdog has carried every lease past 4×TTL from the start:
    // renewed while 3×TTL went by.
    let renewed_until = Instant::now() + ttl * 4;
    let give_up = Instant::now() + ttl * 20;
    while !guards.iter().all(|g| g.deadline() >= renewed_until) {
        assert!(
            Instant::now() < give_up,
            "leases not renewed past 4×TTL in 20×TTL"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for g in &guards {
        assert!(!g.is_lost(), "{} lost", g.key());
    }
    let other = Locker::new(driver);
    for i in 0..200 {
        assert!(matches!(
            other.try_lock(format!("bulk/{i}")).await,
            Err(LockError::Contended { .. })
        ));
    }
    for g in guards {
        g.release().await.unwrap();
    }
}

/// A reader renewing after a writer took the key (its row's lease ran out
/// while the renewal was held up) learns it lost the hold: it never goes on
/// believing it holds beside the writer.
#[tokio::test]
async fn a_read_hold_renewed_after_a_writer_took_the_key_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locks.db");
    let driver = SqliteDriver::connect(SqliteOptions::new(&path))
        .await
        .unwrap();
    let reader = Locker::new(Arc::new(driver));
    let read = reader.read_lock("k").no_wait().await.unwrap();
    // What a writer's grant leaves in the key row once the readers' lease ran
    // out: the key its own, live.
    let db = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    sqlx::query("UPDATE lockkit_locks SET owner = 'writer', expires_at = expires_at + 60000 WHERE name = 'k'")
        .execute(&db)
        .await
        .unwrap();
    match read.extend(Duration::from_secs(30)).await {
        Err(LockError::Lost { .. }) => {}
        other => panic!("the reader's renewal beside a writer: {other:?}"),
    }
    assert!(read.is_lost());
}
