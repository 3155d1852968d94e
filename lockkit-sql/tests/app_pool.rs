//! Drivers built on the application's own sqlx pool, against real servers: they
//! take the same locks as drivers connected by URL, in every mode, and leave the
//! pool open when they are dropped.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::time::Duration;

use lockkit::Locker;
use lockkit::driver::LockDriver;
use lockkit::mysql::{self, MySqlOptions};
use lockkit::postgres::{self, PgOptions};
use lockkit::sqlite::SqliteDriver;
use lockkit_conformance::exclude_each_other;
use lockkit_testkit::{MariaDb, Postgres};

const WITHIN: Duration = Duration::from_secs(15);

/// The pool still answers after every driver on it is gone.
async fn still_open<DB: sqlx::Database>(pool: &sqlx::Pool<DB>) {
    use sqlx::Connection;
    assert!(!pool.is_closed(), "dropping the driver closed the pool");
    pool.acquire().await.unwrap().ping().await.unwrap();
}

/// A driver on `pool` in each of `modes` (options, and the URL of a driver in
/// the same mode) takes the same locks as the URL's, and leaves the pool open.
async fn serves_every_mode<DB, O, F, Fut>(
    pool: sqlx::Pool<DB>,
    modes: [(O, String); 2],
    from_pool: F,
) where
    DB: sqlx::Database,
    F: Fn(sqlx::Pool<DB>, O) -> Fut,
    Fut: Future<Output = lockkit::Result<Arc<dyn LockDriver>>>,
{
    for (options, url) in modes {
        let app = Locker::new(from_pool(pool.clone(), options).await.unwrap());
        let by_url = lockkit::connect(&url).await.unwrap();
        exclude_each_other(&app, &by_url, "orders", WITHIN)
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        drop(app);
        still_open(&pool).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_pool_of_the_application_serves_every_mode_and_stays_open() {
    let pg = Postgres::start().await.unwrap();
    let pool = sqlx::PgPool::connect(&pg.url()).await.unwrap();
    let modes = [
        (PgOptions::default(), pg.url()),
        (
            PgOptions::default().advisory(true),
            format!("{}?mode=advisory", pg.url()),
        ),
    ];
    serves_every_mode(pool, modes, postgres::from_pool).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mariadb_pool_of_the_application_serves_every_mode_and_stays_open() {
    let db = MariaDb::start().await.unwrap();
    let pool = sqlx::MySqlPool::connect(&db.url()).await.unwrap();
    let modes = [
        (MySqlOptions::default(), db.url()),
        (
            MySqlOptions::default().get_lock(true),
            format!("{}?mode=get_lock", db.url()),
        ),
    ];
    serves_every_mode(pool, modes, mysql::from_pool).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_pool_of_the_application_shares_its_file_and_stays_open() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("app.db");
    let pool = sqlx::sqlite::SqlitePoolOptions::new()
        .connect_with(
            sqlx::sqlite::SqliteConnectOptions::new()
                .filename(&file)
                .create_if_missing(true),
        )
        .await
        .unwrap();
    let driver = SqliteDriver::from_pool(pool.clone(), "app_locks")
        .await
        .unwrap();
    let app = Locker::new(Arc::new(driver));
    let url = format!("sqlite://{}?table=app_locks", file.display());
    let by_url = lockkit::connect(&url).await.unwrap();
    exclude_each_other(&app, &by_url, "orders", WITHIN)
        .await
        .unwrap();
    drop(app);
    still_open(&pool).await;
    match SqliteDriver::from_pool(pool.clone(), "app locks").await {
        Err(lockkit::LockError::Config(m)) => assert!(m.contains("app locks"), "{m}"),
        other => panic!("a bad table name: {:?}", other.map(|_| ())),
    }
}
