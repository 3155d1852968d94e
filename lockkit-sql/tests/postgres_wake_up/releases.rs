//! An exclusive release notifies only while someone waits for or watches its
//! key (the key row's `wake_until`): with nobody, it costs no listener a
//! wake-up; a waiter of any kind and an observer still learn of it at once.

use super::*;

/// Sends a marker on the channel after everything before it: a listener that
/// receives the marker first heard nothing before it.
async fn mark(admin: &mut sqlx::PgConnection) {
    sqlx::query("SELECT pg_notify($1, 'marker')")
        .bind(CHANNEL)
        .execute(admin)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncontended_release_notifies_no_one() {
    let server = Postgres::start().await.unwrap();
    let mut admin = admin(&server).await;
    let locker = locker(&server.url()).await;
    let mut listener = PgListener::connect(&server.url()).await.unwrap();
    listener.listen(CHANNEL).await.unwrap();

    for _ in 0..3 {
        let guard = locker.lock("stock").await.unwrap();
        guard.release().await.unwrap();
    }
    mark(&mut admin).await;

    assert_eq!(next_payload(&mut listener).await, "marker");
}

/// An observer reading only once an hour still learns of the leader's
/// resignation at once: it told the database it watches before it read, so
/// the resignation is notified (heard before a marker sent after it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observer_learns_of_a_release_at_once_not_at_its_interval() {
    let server = Postgres::start().await.unwrap();
    let mut admin = admin(&server).await;
    let mut listener = PgListener::connect(&server.url()).await.unwrap();
    listener.listen(CHANNEL).await.unwrap();
    let leader = locker(&server.url()).await;
    let watching = locker(&server.url()).await;
    let leadership = leader.election("primary").campaign("a").await.unwrap();
    let mut observer = watching
        .election("primary")
        .observe()
        .interval(Duration::from_secs(3600));
    let first = observer.changed().await.unwrap();
    assert_eq!(first.and_then(|l| l.value).as_deref(), Some("a"));
    let next = tokio::spawn(async move { observer.changed().await });

    leadership.resign().await.unwrap();
    mark(&mut admin).await;

    assert_eq!(next_payload(&mut listener).await, "primary");
    let next = timeout(WITHIN, next)
        .await
        .expect("the release wakes the observer, not its interval");
    assert!(next.unwrap().unwrap().is_none());
}

/// A read waiter polls (it has no queue row of its own kind), yet the
/// exclusive release that lets it in wakes it: counted by the wait's metric.
#[test]
fn a_read_waiter_is_woken_by_the_exclusive_release() {
    let woken = counting_attempts(|snapshotter| async move {
        let server = Postgres::start().await.unwrap();
        let mut admin = admin(&server).await;
        let held = hold_stock(&server.url()).await;
        let reader = locker(&server.url()).await;
        let waiting = tokio::spawn(async move {
            let guard = reader.read_lock("stock").wait(WITHIN).await.unwrap();
            guard.release().await.unwrap();
        });
        until_queued(&mut admin, "stock", 1).await;
        // Each listener wakes its waiters once as it starts: before the count.
        until_listening(&mut admin, 2).await;
        woken_attempts(&snapshotter);

        held.release().await.unwrap();

        timeout(WITHIN, waiting).await.unwrap().unwrap();
        woken_attempts(&snapshotter)
    });
    assert!(woken >= 1, "the release woke no attempt: the reader polled");
}

/// A waiter pushes the key's `wake_until` in the statement that writes its
/// queue row, as far as the row lives: once the last waiter is gone, releases
/// stop being notified when its row would have lapsed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiters_push_lasts_as_long_as_its_queue_row() {
    let server = Postgres::start().await.unwrap();
    let mut admin = admin(&server).await;
    let held = hold_stock(&server.url()).await;
    let waiting = take_and_release(locker(&server.url()).await, "stock");
    until_queued(&mut admin, "stock", 1).await;
    let (row, wake): (f64, f64) = sqlx::query_as(
        "SELECT extract(epoch FROM w.expires_at)::float8, extract(epoch FROM l.wake_until)::float8 \
         FROM lockkit_locks_waiters w JOIN lockkit_locks l USING (name) WHERE name = 'stock'",
    )
    .fetch_one(&mut admin)
    .await
    .unwrap();

    // Pushed in the same statement, to the same time to live.
    assert!((wake - row).abs() < 1.0, "wake_until {wake}, row {row}");
    held.release().await.unwrap();
    timeout(WITHIN, waiting).await.unwrap().unwrap();
}
