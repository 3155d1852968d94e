//! `lockkit::fence::FencedUpdate` against real databases: a write with a lower
//! token than the highest the row has seen changes nothing, on PostgreSQL,
//! MariaDB and SQLite, with each one's placeholders.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use lockkit::FencingToken;
use lockkit::fence::{FencedUpdate, Placeholders};
use sqlx::AssertSqlSafe;

fn update() -> FencedUpdate {
    FencedUpdate::new("accounts", "id")
        .set("balance")
        .fence_column("last_token")
}

fn token(t: u64) -> i64 {
    i64::try_from(FencingToken(t)).unwrap()
}

#[tokio::test]
async fn postgres_refuses_a_stale_token() {
    let server = lockkit_testkit::Postgres::start().await.unwrap();
    let pool = sqlx::PgPool::connect(&server.url()).await.unwrap();
    sqlx::query("CREATE TABLE accounts (id TEXT PRIMARY KEY, balance BIGINT, last_token BIGINT NOT NULL DEFAULT 0)")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO accounts (id, balance) VALUES ('a', 100)")
        .execute(&pool)
        .await
        .unwrap();
    let sql = update().sql(Placeholders::Dollar).unwrap();
    let write = |balance: i64, t: u64| {
        sqlx::query(AssertSqlSafe(sql.clone()))
            .bind(balance)
            .bind(token(t))
            .bind("a")
            .execute(&pool)
    };
    assert_eq!(write(90, 5).await.unwrap().rows_affected(), 1);
    assert_eq!(
        write(80, 4).await.unwrap().rows_affected(),
        0,
        "stale token 4 wrote"
    );
    assert_eq!(
        write(70, 5).await.unwrap().rows_affected(),
        1,
        "the holder may write again with its own token"
    );
    let balance: i64 = sqlx::query_scalar("SELECT balance FROM accounts")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(balance, 70);
}

#[tokio::test]
async fn mariadb_refuses_a_stale_token() {
    let server = lockkit_testkit::MariaDb::start().await.unwrap();
    let pool = sqlx::MySqlPool::connect(&server.url()).await.unwrap();
    sqlx::query("CREATE TABLE accounts (id VARCHAR(16) PRIMARY KEY, balance BIGINT, last_token BIGINT NOT NULL DEFAULT 0)")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO accounts (id, balance) VALUES ('a', 100)")
        .execute(&pool)
        .await
        .unwrap();
    let sql = update().sql(Placeholders::Question).unwrap();
    // `?` placeholders are bound in order: the token twice.
    let write = |balance: i64, t: u64| {
        sqlx::query(AssertSqlSafe(sql.clone()))
            .bind(balance)
            .bind(token(t))
            .bind("a")
            .bind(token(t))
            .execute(&pool)
    };
    assert_eq!(write(90, 5).await.unwrap().rows_affected(), 1);
    assert_eq!(
        write(80, 4).await.unwrap().rows_affected(),
        0,
        "stale token 4 wrote"
    );
    let balance: i64 = sqlx::query_scalar("SELECT balance FROM accounts")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(balance, 90);
}

#[tokio::test]
async fn sqlite_refuses_a_stale_token() {
    let pool = sqlx::SqlitePool::connect("sqlite::memory:").await.unwrap();
    sqlx::query("CREATE TABLE accounts (id TEXT PRIMARY KEY, balance INTEGER, last_token INTEGER NOT NULL DEFAULT 0)")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO accounts (id, balance) VALUES ('a', 100)")
        .execute(&pool)
        .await
        .unwrap();
    let sql = update().sql(Placeholders::QuestionNumbered).unwrap();
    let write = |balance: i64, t: u64| {
        sqlx::query(AssertSqlSafe(sql.clone()))
            .bind(balance)
            .bind(token(t))
            .bind("a")
            .execute(&pool)
    };
    assert_eq!(write(90, 5).await.unwrap().rows_affected(), 1);
    assert_eq!(
        write(80, 4).await.unwrap().rows_affected(),
        0,
        "stale token 4 wrote"
    );
    assert_eq!(write(85, 6).await.unwrap().rows_affected(), 1);
}
