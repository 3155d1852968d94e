//! PostgreSQL as real deployments run it (the driver's invariants P3 and P4):
//! behind PgBouncer, with PgBouncer's defaults, and with `idle_session_timeout`
//! shorter than a hold. The whole conformance suite also runs through
//! PgBouncer and under SERIALIZABLE (`conformance_postgres.rs`).
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit::{LockError, Locker, WakeUp};
use lockkit_testkit::{PgBouncer, PoolMode, Postgres};

async fn connect(url: &str) -> Locker {
    lockkit::connect(url).await.unwrap()
}

#[tokio::test]
async fn through_a_transaction_pooler_statements_go_as_text_and_waiters_poll() {
    let bouncer = PgBouncer::start(PoolMode::Transaction).await.unwrap();
    // Each driver as another process's: with named prepared statements, the
    // second one's first statement failed ("prepared statement sqlx_s_1
    // already exists").
    for round in 0..3 {
        let (a, b) = (connect(&bouncer.url()).await, connect(&bouncer.url()).await);
        assert_eq!(a.capabilities().wake_up, WakeUp::Poll, "round {round}");
        assert!(!a.capabilities().watch);
        let held = a.lock("k").no_wait().await.unwrap();
        assert!(matches!(
            b.try_lock("k").await,
            Err(LockError::Contended { .. })
        ));
        let waiter = tokio::spawn(async move {
            let g = b.lock("k").wait(Duration::from_secs(10)).await.unwrap();
            let token = g.token();
            g.release().await.unwrap();
            token
        });
        let first = held.token();
        held.release().await.unwrap();
        assert!(waiter.await.unwrap() > first);
    }
}

/// What connecting reads of the tables goes as plain text too: an unnamed
/// prepared statement's parse and execution can reach different server
/// connections. Repeated, as each driver's first statements may land anywhere.
#[tokio::test]
async fn through_a_transaction_pooler_connecting_reads_the_tables_as_text() {
    let bouncer = PgBouncer::start(PoolMode::Transaction).await.unwrap();
    let url = bouncer.url();
    connect(&url).await;
    let existing = format!("{url}?tables=existing");
    for _ in 0..5 {
        let (a, b) = tokio::join!(connect(&url), connect(&existing));
        a.lock("k")
            .no_wait()
            .await
            .unwrap()
            .release()
            .await
            .unwrap();
        b.inspect("k").await.unwrap();
    }
}

#[tokio::test]
async fn connected_directly_no_pooler_is_found_and_in_doubt_one_is_assumed() {
    let direct = Postgres::start().await.unwrap();
    let session = PgBouncer::start(PoolMode::Session).await.unwrap();
    let notified = |l: &Locker| l.capabilities().wake_up == WakeUp::Notify;
    assert!(notified(&connect(&direct.url()).await));
    // Through a pooler in session mode: PgBouncer's own port shows that
    // something stands between, which is taken for a transaction-mode pooler
    // unless the URL says otherwise.
    assert!(!notified(&connect(&session.url()).await));
    let told = format!("{}?pooler=none", session.url());
    assert!(notified(&connect(&told).await));
    let advisory = format!("{}?mode=advisory", session.url());
    assert!(matches!(
        lockkit::connect(&advisory).await,
        Err(LockError::Config(_))
    ));
    connect(&format!("{advisory}&pooler=none")).await;
    // Said outright, a pooler is believed.
    let told = connect(&format!("{}?pooler=transaction", direct.url())).await;
    assert!(!notified(&told));
    told.try_lock("k").await.unwrap().release().await.unwrap();
}

#[tokio::test]
async fn advisory_mode_is_refused_behind_a_transaction_pooler() {
    let bouncer = PgBouncer::start(PoolMode::Transaction).await.unwrap();
    let url = format!("{}?mode=advisory", bouncer.url());
    match lockkit::connect(&url).await {
        Err(LockError::Config(why)) => {
            assert!(why.contains("pool_mode=session"), "{why}");
        }
        other => panic!(
            "expected a Config error, got {:?}",
            other.map(|_| "a driver")
        ),
    }
}

/// `idle_session_timeout` shorter than the idle time between two watchdog
/// checks of a 30 s hold (every 10 s).
const IDLE_TIMEOUT: &str = "idle_session_timeout=1s";

#[tokio::test]
async fn an_idle_advisory_holder_keeps_its_session_past_idle_session_timeout() {
    let server = Postgres::start_with_settings(&[IDLE_TIMEOUT])
        .await
        .unwrap();
    let url = format!("{}?mode=advisory", server.url());
    let (holder, other) = (connect(&url).await, connect(&url).await);
    let held = holder
        .lock("k")
        .ttl(Duration::from_secs(30))
        .no_wait()
        .await
        .unwrap();
    let lost = held.lost();
    // Three times the server's idle limit, with no statement on the session.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(matches!(
        other.try_lock("k").await,
        Err(LockError::Contended { .. })
    ));
    assert!(!held.is_lost());
    held.extend(Duration::from_secs(30)).await.unwrap();
    held.release().await.unwrap();
    drop(lost);
    other.try_lock("k").await.unwrap().release().await.unwrap();
}

/// The server processes of the drivers' `LISTEN` connections.
async fn listeners(server: &Postgres) -> Vec<String> {
    let sql = "SELECT pid FROM pg_stat_activity WHERE query LIKE 'LISTEN %' ORDER BY pid";
    let out = server
        .psql()
        .unwrap()
        .args(["-c", sql])
        .output()
        .await
        .unwrap();
    let mut pids: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    pids.sort();
    pids
}

#[tokio::test]
async fn leases_and_their_waiters_work_under_idle_session_timeout() {
    let server = Postgres::start_with_settings(&[IDLE_TIMEOUT])
        .await
        .unwrap();
    // As two processes: each listens on a connection of its own.
    let (a, b) = (
        connect(&format!("{}?application_name=a", server.url())).await,
        connect(&format!("{}?application_name=b", server.url())).await,
    );
    let listening = async {
        loop {
            let pids = listeners(&server).await;
            if pids.len() == 2 {
                return pids;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let before = tokio::time::timeout(Duration::from_secs(10), listening)
        .await
        .unwrap();
    let held = a.lock("k").no_wait().await.unwrap();
    // Every connection both drivers hold sits idle past the server's limit.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        listeners(&server).await,
        before,
        "a LISTEN session was ended"
    );
    assert!(matches!(
        b.try_lock("k").await,
        Err(LockError::Contended { .. })
    ));
    let waiter = tokio::spawn(async move { b.lock("k").wait(Duration::from_secs(10)).await });
    held.release().await.unwrap();
    waiter.await.unwrap().unwrap().release().await.unwrap();
}
