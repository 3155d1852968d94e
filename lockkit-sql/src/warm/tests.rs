#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit_testkit::Postgres;
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;

use super::{PING_IF_IDLE, WARM_FOR, Warm, ran_to_end};

async fn pool(server: &Postgres) -> PgPool {
    PgPoolOptions::new()
        .max_connections(4)
        .connect(&server.url())
        .await
        .unwrap()
}

/// The backend serving `warm`'s next statement, which runs to its end.
async fn backend(warm: &Warm<sqlx::Postgres>) -> i32 {
    let mut conn = warm.conn().await.unwrap();
    let pid = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut *conn)
        .await;
    conn.done(ran_to_end(&pid));
    pid.unwrap()
}

/// Waits (at most 10 s) until `pool` holds `n` idle connections: sqlx takes a
/// connection back in a task of its own, after a ping.
async fn until_idle(pool: &PgPool, n: usize) {
    tokio::time::timeout(Duration::from_secs(10), async {
        while pool.num_idle() != n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the pool never held {n} idle connections"));
}

#[tokio::test]
async fn a_statement_that_ran_to_its_end_leaves_its_connection_warm() {
    let server = Postgres::start().await.unwrap();
    let pool = pool(&server).await;
    let warm = Warm::new(pool.clone(), true);

    let first = backend(&warm).await;

    assert_eq!(warm.kept(), 1);
    assert_eq!((pool.size(), pool.num_idle()), (1, 0));
    assert_eq!(backend(&warm).await, first);
    assert_eq!(pool.size(), 1);
}

#[tokio::test]
async fn on_the_applications_pool_every_connection_goes_back() {
    let server = Postgres::start().await.unwrap();
    let pool = pool(&server).await;
    let warm = Warm::new(pool.clone(), false);

    backend(&warm).await;

    assert_eq!(warm.kept(), 0);
    until_idle(&pool, 1).await;
}

#[tokio::test]
async fn a_statement_cut_short_gives_its_connection_back_through_sqlx() {
    let server = Postgres::start().await.unwrap();
    let pool = pool(&server).await;
    let warm = Warm::new(pool.clone(), true);
    let slow = async {
        let mut conn = warm.conn().await.unwrap();
        let slept = sqlx::query("SELECT pg_sleep(0.5)")
            .execute(&mut *conn)
            .await;
        conn.done(ran_to_end(&slept));
    };

    let cut = tokio::time::timeout(Duration::from_millis(50), slow).await;

    assert!(cut.is_err());
    assert_eq!(warm.kept(), 0);
    // sqlx reads what the statement left, then takes the connection back.
    until_idle(&pool, 1).await;
    let mut conn = warm.conn().await.unwrap();
    let answer: i32 = sqlx::query_scalar("SELECT 7")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    assert_eq!(answer, 7);
}

#[tokio::test]
async fn a_refusal_from_the_server_ran_to_its_end_and_a_broken_connection_did_not() {
    let server = Postgres::start().await.unwrap();
    let pool = pool(&server).await;

    let refused = sqlx::query("SELECT 1 / 0").execute(&pool).await;
    let broken: Result<(), _> = Err(sqlx::Error::Io(std::io::ErrorKind::BrokenPipe.into()));

    assert!(ran_to_end(&refused));
    assert!(!ran_to_end(&broken));
}

#[tokio::test]
async fn connections_idle_for_a_second_go_back_to_the_pool() {
    let server = Postgres::start().await.unwrap();
    let pool = pool(&server).await;
    let warm = Warm::new(pool.clone(), true);
    let (a, b) = (warm.conn().await.unwrap(), warm.conn().await.unwrap());
    a.done(true);
    b.done(true);
    assert_eq!(warm.kept(), 2);

    tokio::time::pause();
    tokio::time::advance(PING_IF_IDLE).await;
    tokio::time::resume();
    let conn = warm.conn().await.unwrap();

    // Neither is kept, nor was handed out: both went back through sqlx.
    assert_eq!(warm.kept(), 0);
    drop(conn);
    until_idle(&pool, pool.size() as usize).await;
}

#[tokio::test]
async fn a_connection_warm_for_a_minute_goes_back_to_the_pool() {
    let server = Postgres::start().await.unwrap();
    let pool = pool(&server).await;
    let warm = Warm::new(pool.clone(), true);
    let conn = warm.conn().await.unwrap();

    tokio::time::pause();
    tokio::time::advance(WARM_FOR).await;
    tokio::time::resume();
    conn.done(true);

    assert_eq!(warm.kept(), 0);
    until_idle(&pool, 1).await;
}
