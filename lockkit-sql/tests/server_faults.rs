//! The database server dies during a hold: the holder learns it (lost() fires, extend
//! fails with a typed error), and after a restart new acquisitions work.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::{LockError, LockGuard, Locker, LostReason};
use lockkit_sql::mysql::{MySqlDriver, MySqlOptions};
use lockkit_sql::postgres::{PgDriver, PgOptions};
use lockkit_testkit::{LogCapture, MariaDb, Postgres};
use tokio::time::{Instant, timeout};

const TTL: Duration = Duration::from_millis(800);

async fn pg_locker(url: &str) -> Locker {
    let driver = PgDriver::connect(PgOptions::from_url(url).unwrap());
    Locker::new(Arc::new(driver.await.unwrap()))
}

async fn mysql_locker(url: &str) -> Locker {
    let driver = MySqlDriver::connect(MySqlOptions::from_url(url).unwrap());
    Locker::new(Arc::new(driver.await.unwrap()))
}

/// With the server dead: the lost signal fires by the lease deadline (renewals
/// cannot succeed), and an explicit extend fails with a typed error.
async fn holder_learns_of_the_dead_server(guard: &LockGuard, killed: Instant) {
    let reason = timeout(TTL * 3, guard.lost()).await.unwrap();
    assert_eq!(reason, LostReason::Expired);
    let after = killed.elapsed();
    assert!(
        after <= TTL + Duration::from_millis(200),
        "lost() fired {after:?} after the kill"
    );
    match guard.extend(TTL).await {
        Err(LockError::Lost { .. } | LockError::Connection { .. } | LockError::Backend { .. }) => {}
        other => panic!("extend with the server dead: {other:?}"),
    }
}

#[tokio::test]
async fn postgres_killed_during_a_hold_then_restarted() {
    let mut pg = Postgres::start().await.unwrap();
    let url = pg.url();
    let locker = pg_locker(&url).await;
    let guard = locker.lock("orders/7").ttl(TTL).no_wait().await.unwrap();
    let first = guard.token();
    pg.kill();
    holder_learns_of_the_dead_server(&guard, Instant::now()).await;
    drop(guard);

    pg.restart().await.unwrap();
    let fresh = pg_locker(&url).await;
    let g = fresh
        .lock("orders/7")
        .wait(Duration::from_secs(10))
        .await
        .unwrap();
    assert!(
        g.token() > first,
        "token {} after restart, {} before",
        g.token(),
        first
    );
    g.release().await.unwrap();
    // The old client's pool reconnects too.
    let g = locker
        .lock("orders/8")
        .wait(Duration::from_secs(10))
        .await
        .unwrap();
    g.release().await.unwrap();
}

#[tokio::test]
async fn mariadb_killed_during_a_hold_then_restarted() {
    let mut db = MariaDb::start().await.unwrap();
    let url = db.url();
    let locker = mysql_locker(&url).await;
    let guard = locker.lock("orders/7").ttl(TTL).no_wait().await.unwrap();
    let first = guard.token();
    db.kill();
    holder_learns_of_the_dead_server(&guard, Instant::now()).await;
    drop(guard);

    db.restart().await.unwrap();
    let fresh = mysql_locker(&url).await;
    let g = fresh
        .lock("orders/7")
        .wait(Duration::from_secs(10))
        .await
        .unwrap();
    assert!(
        g.token() > first,
        "token {} after restart, {} before",
        g.token(),
        first
    );
    g.release().await.unwrap();
}

/// How long the waiter's server stays dead: past the waiter's longest pause
/// between attempts (PostgreSQL's 250 ms poll) and its connect timeout (300 ms
/// below), so that at least one of its attempts fails on the dead server. This is
/// the fault's length, not a wait for a state.
const DOWN: Duration = Duration::from_millis(1500);

/// A PostgreSQL waiter while the server is killed and stays down: its attempts in
/// the meantime fail with connection errors, which are transient within the wait
/// (the loop shared with MySQL). It is granted after the restart, once the
/// holder's lease has ended, with a higher token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_waiter_is_granted_after_a_server_restart() {
    let mut pg = Postgres::start().await.unwrap();
    let url = pg.url();
    let holder = pg_locker(&url).await;
    let waiter = pg_locker(&format!("{url}?connect_timeout_ms=300")).await;
    let held = holder.lock("orders/9").ttl(TTL).no_wait().await.unwrap();
    let first = held.token();
    let waited =
        tokio::spawn(async move { waiter.lock("orders/9").wait(Duration::from_secs(20)).await });

    pg.kill();
    // The holder goes with the server (else its watchdog would renew the lease
    // once the server is back): its lock frees at its lease's end.
    drop((held, holder));
    tokio::time::sleep(DOWN).await;
    if waited.is_finished() {
        panic!(
            "the waiter gave up while the server was down: {:?}",
            waited.await
        );
    }
    pg.restart().await.unwrap();
    let granted = timeout(Duration::from_secs(20), waited)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        granted.token() > first,
        "token {} after the restart, {first} before",
        granted.token()
    );
    granted.release().await.unwrap();
}

/// The driver's LISTEN connection goes with the server. That is logged once, as
/// a warning, however often the listener retries while the server is down, and
/// its return once, at info; then locking works again. Only this test's lines
/// count: its neighbours kill servers too, and their drivers warn as well.
#[test]
fn a_lost_listen_connection_is_logged_once_and_so_is_its_return() {
    let logs = LogCapture::start();
    logs.block_on(async {
        let mut pg = Postgres::start().await.unwrap();
        let url = pg.url();
        let locker = pg_locker(&url).await;
        pg.kill();
        assert!(
            logs.logged_within("wake-ups lost", Duration::from_secs(10))
                .await,
            "no warning within 10 s of the kill"
        );
        // The condition under test: down long enough for the listener to try
        // again (after 50, 100, 200, 400 and 800 ms).
        tokio::time::sleep(DOWN).await;
        pg.restart().await.unwrap();
        assert!(
            logs.logged_within("wake-ups back", Duration::from_secs(10))
                .await,
            "not back within 10 s of the restart"
        );
        assert_eq!(logs.one_outage("the LISTEN connection is down"), Ok(()));
        let g = locker
            .lock("orders/10")
            .wait(Duration::from_secs(10))
            .await
            .unwrap();
        g.release().await.unwrap();
    })
    .unwrap();
}

#[test]
fn database_urls_keep_passwords_out_of_errors_and_debug() {
    let opts = PgOptions::from_url("postgres://app:hunter2@127.0.0.1:5432/db?table=locks").unwrap();
    assert_eq!(opts.table_name(), "locks");
    assert!(!format!("{opts:?}").contains("hunter2"));
    let opts = MySqlOptions::from_url("mariadb://app:hunter2@127.0.0.1:3306/db").unwrap();
    assert!(!format!("{opts:?}").contains("hunter2"));
    for bad in [
        "postgres://app:hunter2@127.0.0.1:5432/db?table=x;drop",
        "mysql://app:hunter2@127.0.0.1:notaport/db",
    ] {
        let err = match bad.starts_with("postgres") {
            true => PgOptions::from_url(bad).unwrap_err(),
            false => MySqlOptions::from_url(bad).unwrap_err(),
        };
        assert!(
            matches!(err, LockError::InvalidUrl { .. }),
            "{bad}: {err:?}"
        );
        assert!(!format!("{err} {err:?}").contains("hunter2"), "{err}");
    }
}

#[test]
fn unknown_modes_are_invalid_urls_naming_the_choices() {
    let err = PgOptions::from_url("postgres://h/db?mode=get_lock").unwrap_err();
    assert!(err.to_string().contains("lease or advisory"), "{err}");
    let err = MySqlOptions::from_url("mysql://h/db?mode=advisory").unwrap_err();
    assert!(err.to_string().contains("lease or get_lock"), "{err}");
    assert!(PgOptions::from_url("postgres://h/db?mode=lease").is_ok());
}

#[test]
fn session_mode_chosen_after_parsing_gets_the_session_pool_size() {
    let url = "postgres://h/db";
    assert_eq!(PgOptions::from_url(url).unwrap().pool_size(), 8);
    assert_eq!(
        PgOptions::from_url(url).unwrap().advisory(true).pool_size(),
        32
    );
    assert_eq!(
        PgOptions::from_url(&format!("{url}?mode=advisory"))
            .unwrap()
            .pool_size(),
        32
    );
    assert_eq!(
        PgOptions::from_url(url)
            .unwrap()
            .advisory(true)
            .max_connections(4)
            .pool_size(),
        4
    );
    let my = MySqlOptions::from_url("mysql://h/db")
        .unwrap()
        .get_lock(true);
    assert_eq!(my.pool_size(), 32);
}
