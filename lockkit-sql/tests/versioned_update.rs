//! `lockkit::fence::{VersionedUpdate, Optimistic}` against real databases: eight
//! writers add to one counter with no lock, each reading then writing with the
//! version it read, and no update is lost, on PostgreSQL, MariaDB and SQLite.
//! The writers' first attempts all read version 0 before any writes, so at least
//! seven of them meet a conflict and retry.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use lockkit::fence::{Attempt, Optimistic, Placeholders, VersionedUpdate};
use sqlx::AssertSqlSafe;
use tokio::sync::Barrier;

const WRITERS: usize = 8;
const ADDS: i64 = 25;

/// Runs the writers on `$pool` with placeholders `$style`, then checks the
/// counter: every add counted, the version bumped once per add, and the first
/// round's conflicts seen. A macro because the three pools share no trait
/// that binds and fetches without a page of bounds.
macro_rules! writers_lose_no_update {
    ($pool:expr, $style:expr) => {{
        let pool = $pool;
        let sql = VersionedUpdate::new("counters", "id")
            .set("total")
            .sql($style)
            .unwrap();
        let conflicts = Arc::new(AtomicU32::new(0));
        let first_reads = Arc::new(Barrier::new(WRITERS));
        let mut writers = Vec::new();
        for _ in 0..WRITERS {
            let (pool, sql) = (pool.clone(), sql.clone());
            let (conflicts, first_reads) = (conflicts.clone(), first_reads.clone());
            writers.push(tokio::spawn(async move {
                for add in 0..ADDS {
                    let retry = Optimistic::new()
                        .attempts(1_000)
                        .pauses(Duration::from_millis(1), Duration::from_millis(20));
                    retry
                        .run(|attempt| {
                            let (pool, sql) = (pool.clone(), sql.clone());
                            let (conflicts, first_reads) = (conflicts.clone(), first_reads.clone());
                            async move {
                                let (total, version): (i64, i64) = sqlx::query_as(
                                    "SELECT total, version FROM counters WHERE id = 'c'",
                                )
                                .fetch_one(&pool)
                                .await?;
                                if add == 0 && attempt == 1 {
                                    first_reads.wait().await;
                                }
                                let written = sqlx::query(AssertSqlSafe(sql))
                                    .bind(total + 1)
                                    .bind("c")
                                    .bind(version)
                                    .execute(&pool)
                                    .await?;
                                if written.rows_affected() == 1 {
                                    Ok::<_, sqlx::Error>(Attempt::Written(()))
                                } else {
                                    conflicts.fetch_add(1, Ordering::Relaxed);
                                    Ok(Attempt::Conflict)
                                }
                            }
                        })
                        .await
                        .unwrap();
                }
            }));
        }
        for w in writers {
            w.await.unwrap();
        }
        let (total, version): (i64, i64) =
            sqlx::query_as("SELECT total, version FROM counters WHERE id = 'c'")
                .fetch_one(&pool)
                .await
                .unwrap();
        let adds = WRITERS as i64 * ADDS;
        assert_eq!(total, adds, "an update was lost");
        assert_eq!(version, adds, "the version moved other than once per write");
        let conflicts = conflicts.load(Ordering::Relaxed);
        assert!(
            conflicts >= WRITERS as u32 - 1,
            "only {conflicts} conflicts: the writers never raced"
        );
    }};
}

const CREATE: &str = "CREATE TABLE counters (id VARCHAR(8) PRIMARY KEY, total BIGINT NOT NULL, version BIGINT NOT NULL DEFAULT 0)";
const SEED: &str = "INSERT INTO counters (id, total) VALUES ('c', 0)";

#[tokio::test]
async fn postgres_writers_lose_no_update() {
    let server = lockkit_testkit::Postgres::start().await.unwrap();
    let pool = sqlx::PgPool::connect(&server.url()).await.unwrap();
    sqlx::query(CREATE).execute(&pool).await.unwrap();
    sqlx::query(SEED).execute(&pool).await.unwrap();
    writers_lose_no_update!(pool, Placeholders::Dollar);
}

#[tokio::test]
async fn mariadb_writers_lose_no_update() {
    let server = lockkit_testkit::MariaDb::start().await.unwrap();
    let pool = sqlx::MySqlPool::connect(&server.url()).await.unwrap();
    sqlx::query(CREATE).execute(&pool).await.unwrap();
    sqlx::query(SEED).execute(&pool).await.unwrap();
    writers_lose_no_update!(pool, Placeholders::Question);
}

#[tokio::test]
async fn sqlite_writers_lose_no_update() {
    let dir = tempfile::tempdir().unwrap();
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.path().join("counters.db"))
        .create_if_missing(true)
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    sqlx::query(CREATE).execute(&pool).await.unwrap();
    sqlx::query(SEED).execute(&pool).await.unwrap();
    writers_lose_no_update!(pool, Placeholders::QuestionNumbered);
}
