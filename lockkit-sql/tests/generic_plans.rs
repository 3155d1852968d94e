//! lockkit's own PostgreSQL connections plan each statement once
//! (`plan_cache_mode = force_generic_plan`), by its keys' indexes
//! (`enable_seqscan = off`), and only where the session is lockkit's alone.
//! Counted on a real server by pg_stat_statements, which counts plans and
//! buffers beside runs.
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

/// A locker on a pool lockkit opens, of one connection (found to be
/// PostgreSQL itself), so that every statement runs on it.
async fn on_its_own_pool(url: &str) -> Locker {
    let options = PgOptions::from_url(url).unwrap().max_connections(1);
    Locker::new(Arc::new(PgDriver::connect(options).await.unwrap()))
}

/// A locker on a pool of one connection that the application opened.
async fn on_the_applications_pool(url: &str) -> Locker {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .unwrap();
    let driver = PgDriver::from_pool(pool, PgOptions::default())
        .await
        .unwrap();
    Locker::new(Arc::new(driver))
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

/// The statistics of lock tables with no rows, as autovacuum would leave them.
async fn analyze_empty(admin: &mut PgConnection) {
    sqlx::query("ANALYZE lockkit_locks, lockkit_locks_waiters")
        .execute(admin)
        .await
        .unwrap();
}

/// 20,000 waiters, each of another key, live for an hour.
async fn queue_other_keys(admin: &mut PgConnection) {
    sqlx::query(
        "INSERT INTO lockkit_locks_waiters (name, waiter, since, expires_at)
         SELECT 'other-' || i, 'w' || i, clock_timestamp(), clock_timestamp() + interval '1 hour'
         FROM generate_series(1, 20000) AS i",
    )
    .execute(admin)
    .await
    .unwrap();
}

/// lockkit's session settings, as pg_stat_statements shows them.
const SETTINGS: [&str; 2] = ["%plan_cache_mode%", "%enable_seqscan%"];

/// The acquire's upsert, as pg_stat_statements shows it.
const ACQUIRE: &str = "INSERT INTO lockkit_locks AS l%VALUES%";

#[tokio::test]
async fn a_driver_on_its_own_pool_plans_each_statement_once() {
    let server = Postgres::start_with_settings(&COUNTED).await.unwrap();
    let mut admin = admin(&server.url()).await;
    let locker = on_its_own_pool(&server.url()).await;
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
    lock_and_release(&on_the_applications_pool(&server.url()).await, RUNS).await;
    for setting in SETTINGS {
        let (set, _) = counted(&mut admin, setting).await;
        assert_eq!(set, 0, "{setting} was set on the application's session");
    }
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
    for setting in SETTINGS {
        let (set, _) = counted(&mut admin, setting).await;
        assert_eq!(set, 0, "{setting} was set on a pooled server session");
    }
}

/// Buffers the statements whose text is like `like` touched per run.
async fn blocks_per_run(admin: &mut PgConnection, like: &str) -> f64 {
    sqlx::query_scalar(
        "SELECT (sum(shared_blks_hit + shared_blks_read) / sum(calls))::float8
         FROM pg_stat_statements WHERE query LIKE $1",
    )
    .bind(like)
    .fetch_one(admin)
    .await
    .unwrap()
}

/// A plan kept for the life of a connection is made from the statistics of the
/// moment, and a queue table is empty most of the time: planned then, the
/// acquire would scan every waiter's row of every key for the queue check.
/// Planned on tables analyzed empty (no autovacuum to plan it again), then run
/// with 20,000 other keys' waiters, it still reads only its own key's rows.
#[tokio::test]
async fn a_plan_made_on_empty_tables_still_finds_rows_by_key() {
    let settings = [COUNTED[0], COUNTED[1], "autovacuum=off"];
    let server = Postgres::start_with_settings(&settings).await.unwrap();
    let mut admin = admin(&server.url()).await;
    let locker = on_its_own_pool(&server.url()).await;
    analyze_empty(&mut admin).await;
    lock_and_release(&locker, 2).await;
    queue_other_keys(&mut admin).await;
    sqlx::query("SELECT pg_stat_statements_reset()")
        .execute(&mut admin)
        .await
        .unwrap();
    lock_and_release(&locker, RUNS).await;
    let table_pages: i64 = sqlx::query_scalar(
        "SELECT pg_relation_size('lockkit_locks_waiters') / current_setting('block_size')::int8",
    )
    .fetch_one(&mut admin)
    .await
    .unwrap();
    let blocks = blocks_per_run(&mut admin, ACQUIRE).await;
    assert!(
        blocks < 20.0,
        "the acquire touched {blocks:.0} buffers a run: a scan of the \
         {table_pages}-page waiters table"
    );
}

/// On the application's pool lockkit sets nothing, and PostgreSQL keeps a
/// generic plan from the sixth run, made as above. The queue check still reads
/// the acquiring waiter's place once, not once per row: behind 20,000 other
/// keys' waiters, an acquire answers within the request timeout.
#[tokio::test]
async fn an_acquire_on_the_applications_pool_outlives_a_plan_made_on_empty_tables() {
    let server = Postgres::start_with_settings(&["autovacuum=off"])
        .await
        .unwrap();
    let mut admin = PgConnection::connect(&server.url()).await.unwrap();
    let locker = on_the_applications_pool(&server.url()).await;
    analyze_empty(&mut admin).await;
    lock_and_release(&locker, RUNS).await;
    queue_other_keys(&mut admin).await;
    lock_and_release(&locker, 1).await;
}
