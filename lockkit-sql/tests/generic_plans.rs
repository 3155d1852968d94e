//! lockkit's own PostgreSQL connections plan each statement once
//! (`plan_cache_mode = force_generic_plan`), and only where the session is
//! lockkit's alone. Counted on a real server by pg_stat_statements, which
//! counts plans beside runs.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::Locker;
use lockkit_sql::postgres::{PgDriver, PgOptions};
use lockkit_testkit::{PgBouncer, PoolMode, Postgres};
use sqlx::{Connection, PgConnection, Row};

/// A server that counts each statement's plans.
const COUNTED: [&str; 2] = [
    "shared_preload_libraries=pg_stat_statements",
    "pg_stat_statements.track_planning=on",
];

/// PostgreSQL plans a prepared statement afresh for each of its first five runs
/// on a connection, unless told to keep the first plan.
const RUNS: i64 = 12;

async fn admin(url: &str) -> PgConnection {
    let mut admin = PgConnection::connect(url).await.unwrap();
    sqlx::query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .execute(&mut admin)
        .await
        .unwrap();
    admin
}

/// Runs and plans, summed, of the statements whose text is like `like`.
async fn counted(admin: &mut PgConnection, like: &str) -> (i64, i64) {
    let row = sqlx::query(
        "SELECT coalesce(sum(calls), 0)::int8, coalesce(sum(plans), 0)::int8
         FROM pg_stat_statements WHERE query LIKE $1",
    )
    .bind(like)
    .fetch_one(admin)
    .await
    .unwrap();
    (row.get(0), row.get(1))
}

async fn lock_and_release(locker: &Locker, times: i64) {
    for _ in 0..times {
        let guard = locker
            .lock("plans")
            .ttl(Duration::from_secs(60))
            .no_wait()
            .await
            .unwrap();
        guard.release().await.unwrap();
    }
}

/// The acquire's upsert, as pg_stat_statements shows it.
const ACQUIRE: &str = "INSERT INTO lockkit_locks AS l%VALUES%";

#[tokio::test]
async fn a_driver_on_its_own_pool_plans_each_statement_once() {
    let server = Postgres::start_with_settings(&COUNTED).await.unwrap();
    let mut admin = admin(&server.url()).await;
    // One connection (found to be PostgreSQL itself), so every statement runs
    // on it.
    let options = PgOptions::from_url(&server.url())
        .unwrap()
        .max_connections(1);
    let locker = Locker::new(Arc::new(PgDriver::connect(options).await.unwrap()));
    lock_and_release(&locker, RUNS).await;
    let (calls, plans) = counted(&mut admin, ACQUIRE).await;
    assert_eq!(calls, RUNS);
    assert_eq!(
        plans, 1,
        "the acquire was planned {plans} times in {calls} runs"
    );
}

#[tokio::test]
async fn a_driver_on_the_applications_pool_leaves_its_sessions_alone() {
    let server = Postgres::start_with_settings(&COUNTED).await.unwrap();
    let mut admin = admin(&server.url()).await;
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(&server.url())
        .await
        .unwrap();
    let driver = PgDriver::from_pool(pool, PgOptions::default())
        .await
        .unwrap();
    lock_and_release(&Locker::new(Arc::new(driver)), RUNS).await;
    let (set, _) = counted(&mut admin, "%plan_cache_mode%").await;
    assert_eq!(
        set, 0,
        "plan_cache_mode was set on the application's session"
    );
    let (calls, plans) = counted(&mut admin, ACQUIRE).await;
    assert_eq!(calls, RUNS);
    assert!(
        plans >= 5,
        "{plans} plans: PostgreSQL's own choice, as before"
    );
}

#[tokio::test]
async fn through_a_transaction_pooler_no_session_setting_is_left_behind() {
    let bouncer = PgBouncer::start_with_settings(PoolMode::Transaction, &COUNTED)
        .await
        .unwrap();
    let mut admin = admin(&bouncer.postgres().url()).await;
    let locker = lockkit::connect(&bouncer.url()).await.unwrap();
    lock_and_release(&locker, RUNS).await;
    let (set, _) = counted(&mut admin, "%plan_cache_mode%").await;
    assert_eq!(set, 0, "plan_cache_mode was set on a pooled server session");
}
