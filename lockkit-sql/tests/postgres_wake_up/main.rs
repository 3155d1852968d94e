//! PostgreSQL's wake-ups: a release's `NOTIFY` wakes the waiters and
//! observers of its key. `queue.rs`: an exclusive acquire that waits is a row
//! of `lockkit_locks_waiters`, and a release names the oldest live one, which
//! alone of the queued waiters its driver wakes. `releases.rs`: an exclusive
//! release notifies only while someone waits for or watches its key. Each
//! waiter here has its own driver, with an `application_name` of its own, and
//! so its own `LISTEN` connection, as separate processes would (the drivers of
//! one process that connect alike share one).
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lockkit_core::metrics::names;
use lockkit_core::{LockGuard, Locker};
use lockkit_sql::postgres::{PgDriver, PgOptions};
use lockkit_testkit::Postgres;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use sqlx::Connection;
use sqlx::postgres::PgListener;
use tokio::task::JoinHandle;
use tokio::time::timeout;

mod queue;
mod releases;

/// The default table's release channel.
const CHANNEL: &str = "lockkit_lockkit_locks";

/// Far longer than any wait here should take.
const WITHIN: Duration = Duration::from_secs(15);

/// A driver of its own, as if in a process of its own.
async fn locker(url: &str) -> Locker {
    static PROCESSES: AtomicUsize = AtomicUsize::new(0);
    let process = PROCESSES.fetch_add(1, Ordering::Relaxed);
    let sep = if url.contains('?') { '&' } else { '?' };
    let url = format!("{url}{sep}application_name=process-{process}");
    let driver = PgDriver::connect(PgOptions::from_url(&url).unwrap());
    Locker::new(Arc::new(driver.await.unwrap()))
}

/// "stock", held by another driver on a fixed 60 s lease (no renewals).
async fn hold_stock(url: &str) -> LockGuard {
    let holder = locker(url).await;
    let held = holder.lock("stock").lease(Duration::from_secs(60));
    held.await.unwrap()
}

async fn admin(server: &Postgres) -> sqlx::PgConnection {
    sqlx::PgConnection::connect(&server.url()).await.unwrap()
}

/// The key's waiter rows, oldest first.
async fn queued(admin: &mut sqlx::PgConnection, key: &str) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT waiter FROM lockkit_locks_waiters WHERE name = $1 ORDER BY since, waiter",
    )
    .bind(key)
    .fetch_all(admin)
    .await
    .unwrap()
}

/// Waits until the key has `n` waiter rows.
async fn until_queued(admin: &mut sqlx::PgConnection, key: &str, n: usize) {
    let admin = tokio::sync::Mutex::new(admin);
    lockkit_conformance::until(&format!("{n} waiters queued on {key}"), WITHIN, || async {
        queued(&mut **admin.lock().await, key).await.len() == n
    })
    .await
    .expect("the waiters queue");
}

/// A waiter that takes `key`, then releases it.
fn take_and_release(locker: Locker, key: &'static str) -> JoinHandle<()> {
    tokio::spawn(async move {
        let guard = locker.lock(key).wait(WITHIN).await.unwrap();
        guard.release().await.unwrap();
    })
}

async fn next_payload(listener: &mut PgListener) -> String {
    timeout(WITHIN, listener.recv())
        .await
        .expect("a release is notified")
        .unwrap()
        .payload()
        .to_owned()
}

/// The attempts of waiting acquires that a wake-up started since the last call
/// (the wait's metric, `cause` = `woken`: each snapshot resets the counters).
fn woken_attempts(snapshotter: &Snapshotter) -> u64 {
    attempts(snapshotter, "woken")
}

/// The attempts of waiting acquires made for `cause` since the last snapshot.
fn attempts(snapshotter: &Snapshotter, cause: &str) -> u64 {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| {
            let key = key.key();
            key.name() == names::WAIT_ATTEMPTS
                && key
                    .labels()
                    .any(|l| l.key() == names::CAUSE && l.value() == cause)
        })
        .map(|(.., value)| match value {
            DebugValue::Counter(n) => n,
            other => panic!("{} is a counter, not {other:?}", names::WAIT_ATTEMPTS),
        })
        .sum()
}

/// Waits until `n` connections listen: every driver's listener is up, so none
/// wakes its waiters later for having been down (a listener wakes them all
/// once it listens).
async fn until_listening(admin: &mut sqlx::PgConnection, n: i64) {
    let admin = tokio::sync::Mutex::new(admin);
    lockkit_conformance::until(&format!("{n} listeners"), WITHIN, || async {
        let listening: i64 =
            sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %'")
                .fetch_one(&mut **admin.lock().await)
                .await
                .unwrap();
        listening == n
    })
    .await
    .expect("every driver listens");
}

/// Runs `test` on a runtime of this thread's, whose wait metrics `test` reads
/// through the snapshotter it is given.
fn counting_attempts<T, F, Fut>(test: F) -> T
where
    F: FnOnce(Snapshotter) -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || runtime.block_on(test(snapshotter)))
}
