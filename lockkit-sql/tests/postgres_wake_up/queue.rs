//! The waiter queue: which waiter a release wakes, and the queue's rows.

use lockkit_core::LockError;

use super::*;

/// A fake waiter's row: `since` and `expires_at` relative to now.
async fn fake_waiter(admin: &mut sqlx::PgConnection, key: &str, waiter: &str, expires_in: &str) {
    sqlx::query(
        "INSERT INTO lockkit_locks_waiters (name, waiter, since, expires_at) \
         VALUES ($1, $2, now() - interval '1 hour', now() + $3::interval)",
    )
    .bind(key)
    .bind(waiter)
    .bind(expires_in)
    .execute(admin)
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_names_the_oldest_queued_waiter_and_the_last_names_none() {
    let server = Postgres::start().await.unwrap();
    let mut admin = admin(&server).await;
    let held = hold_stock(&server.url()).await;
    let mut waiters = Vec::new();
    for n in 1..=3 {
        waiters.push(take_and_release(locker(&server.url()).await, "stock"));
        until_queued(&mut admin, "stock", n).await;
    }
    let order = queued(&mut admin, "stock").await;
    let mut listener = PgListener::connect(&server.url()).await.unwrap();
    listener.listen(CHANNEL).await.unwrap();

    held.release().await.unwrap();

    assert_eq!(
        next_payload(&mut listener).await,
        format!("stock\u{1f}{}", order[0])
    );
    for waiter in waiters {
        timeout(WITHIN, waiter).await.unwrap().unwrap();
    }
    // Each grant deleted its waiter's row; the last release had no one to name.
    assert!(queued(&mut admin, "stock").await.is_empty());
    let mut payloads = Vec::new();
    for _ in 0..3 {
        payloads.push(next_payload(&mut listener).await);
    }
    assert_eq!(payloads[2], "stock", "{payloads:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_that_times_out_leaves_the_queue() {
    let server = Postgres::start().await.unwrap();
    let mut admin = admin(&server).await;
    let _held = hold_stock(&server.url()).await;
    let waiter = locker(&server.url()).await;
    let waiting = tokio::spawn(async move {
        waiter
            .lock("stock")
            .wait(Duration::from_secs(2))
            .await
            .map(drop)
    });
    until_queued(&mut admin, "stock", 1).await;

    let refused = timeout(WITHIN, waiting).await.unwrap().unwrap();

    assert!(
        matches!(refused, Err(LockError::Timeout { .. })),
        "{refused:?}"
    );
    assert!(queued(&mut admin, "stock").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_waiter_leaves_the_queue() {
    let server = Postgres::start().await.unwrap();
    let mut admin = admin(&server).await;
    let _held = hold_stock(&server.url()).await;
    let waiting = take_and_release(locker(&server.url()).await, "stock");
    until_queued(&mut admin, "stock", 1).await;

    waiting.abort();

    until_queued(&mut admin, "stock", 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_passes_over_an_expired_waiter_and_the_next_join_sweeps_it() {
    let server = Postgres::start().await.unwrap();
    let mut admin = admin(&server).await;
    let held = hold_stock(&server.url()).await;
    let waiting = take_and_release(locker(&server.url()).await, "stock");
    until_queued(&mut admin, "stock", 1).await;
    let live = queued(&mut admin, "stock").await.pop().unwrap();
    // Older than the live waiter, but expired.
    fake_waiter(&mut admin, "stock", "expired", "-1 second").await;
    let mut listener = PgListener::connect(&server.url()).await.unwrap();
    listener.listen(CHANNEL).await.unwrap();

    held.release().await.unwrap();

    assert_eq!(
        next_payload(&mut listener).await,
        format!("stock\u{1f}{live}")
    );
    timeout(WITHIN, waiting).await.unwrap().unwrap();
    assert_eq!(queued(&mut admin, "stock").await, ["expired"]);
    let _held = hold_stock(&server.url()).await;
    let joining = take_and_release(locker(&server.url()).await, "stock");
    let admin = tokio::sync::Mutex::new(admin);
    lockkit_conformance::until("a join sweeps the expired row", WITHIN, || async {
        let rows = queued(&mut *admin.lock().await, "stock").await;
        rows.len() == 1 && rows[0] != "expired"
    })
    .await
    .unwrap();
    joining.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_behind_a_dead_one_is_granted_by_polling() {
    let server = Postgres::start().await.unwrap();
    let mut admin = admin(&server).await;
    let held = hold_stock(&server.url()).await;
    fake_waiter(&mut admin, "stock", "dead", "1 hour").await;
    let waiting = take_and_release(locker(&server.url()).await, "stock");
    until_queued(&mut admin, "stock", 2).await;
    let mut listener = PgListener::connect(&server.url()).await.unwrap();
    listener.listen(CHANNEL).await.unwrap();

    held.release().await.unwrap();

    // The release names the dead waiter, which never comes; the live one polls.
    assert_eq!(next_payload(&mut listener).await, "stock\u{1f}dead");
    timeout(WITHIN, waiting).await.unwrap().unwrap();
    assert_eq!(queued(&mut admin, "stock").await, ["dead"]);
}

/// The expiry of the key's one waiter row, in ms since the epoch.
async fn row_expiry_ms(admin: &mut sqlx::PgConnection, key: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT (extract(epoch FROM expires_at) * 1000)::int8 FROM lockkit_locks_waiters WHERE name = $1",
    )
    .bind(key)
    .fetch_one(admin)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_waiter_keeps_its_row_live() {
    let server = Postgres::start().await.unwrap();
    let mut admin = admin(&server).await;
    let _held = hold_stock(&server.url()).await;
    let waiting = take_and_release(locker(&server.url()).await, "stock");
    until_queued(&mut admin, "stock", 1).await;
    let first = row_expiry_ms(&mut admin, "stock").await;

    // The row lives 10 s, and is pushed out once half of that has gone.
    let admin = tokio::sync::Mutex::new(admin);
    lockkit_conformance::until("the waiter pushes its row's expiry out", WITHIN, || async {
        row_expiry_ms(&mut *admin.lock().await, "stock").await >= first + 4_000
    })
    .await
    .unwrap();
    waiting.abort();
}

/// No herd: eight queued waiters, each with its own driver, take the lock in
/// turn, and each of the nine releases wakes at most one of them. Counted by the
/// wait's metric on a runtime of this thread's: the attempts a wake-up started.
/// A release that woke every waiter of the key would start 8 + 7 + … + 1 = 36.
#[test]
fn each_release_wakes_at_most_one_queued_waiter() {
    const WAITERS: u64 = 8;
    let woken = counting_attempts(|snapshotter| async move {
        let server = Postgres::start().await.unwrap();
        let mut admin = admin(&server).await;
        let held = hold_stock(&server.url()).await;
        let mut waiters = Vec::new();
        for _ in 0..WAITERS {
            waiters.push(take_and_release(locker(&server.url()).await, "stock"));
        }
        until_queued(&mut admin, "stock", WAITERS as usize).await;
        until_listening(&mut admin, WAITERS as i64 + 1).await;
        // From here on: what the releases start.
        woken_attempts(&snapshotter);
        held.release().await.unwrap();
        for waiter in waiters {
            timeout(WITHIN, waiter).await.unwrap().unwrap();
        }
        woken_attempts(&snapshotter)
    });
    assert!(
        (1..=WAITERS + 1).contains(&woken),
        "{woken} attempts woken by 9 releases"
    );
}

/// A queued waiter that releases wake polls only in case a wake-up was lost:
/// its first poll comes a jittered 250 ms (at least 125 ms) after it queued,
/// not 2 ms (as a waiter without notifications, whose pauses double from there:
/// seven polls in its first half second). Counted by the wait's metric, as
/// above, over the waiter's first half second in the queue; the release then
/// grants it.
#[test]
fn a_notified_waiter_polls_only_as_a_fallback() {
    let polled = counting_attempts(|snapshotter| async move {
        let server = Postgres::start().await.unwrap();
        let mut admin = admin(&server).await;
        let held = hold_stock(&server.url()).await;
        attempts(&snapshotter, "polled");
        let waiter = take_and_release(locker(&server.url()).await, "stock");
        until_queued(&mut admin, "stock", 1).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let polled = attempts(&snapshotter, "polled");
        held.release().await.unwrap();
        timeout(WITHIN, waiter).await.unwrap().unwrap();
        polled
    });
    assert!(polled <= 4, "{polled} polls in the waiter's first 500 ms");
}
