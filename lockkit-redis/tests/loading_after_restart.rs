//! A Redis server restarted under a waiter answers `LOADING` until it has loaded
//! its snapshot, as one with a large dataset does for seconds: a waiting acquire
//! takes that as transient and is granted once the server is back.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit_testkit::Redis;
use tokio::time::timeout;

mod common;
use common::{admin, locker, until_queued};

/// The server is killed under a queued waiter and started again from its
/// snapshot, which takes it about 2.5 s to load. The waiter's attempts meanwhile
/// get `LOADING`; it keeps waiting, and once the holder's lease has ended it is
/// granted with a token above the holder's (the counter was in the snapshot).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_outlasts_a_restarted_server_loading_its_snapshot() {
    const KEY: &str = "loading";
    let mut server = Redis::start_slow_to_load().await.unwrap();
    let mut direct = admin(&redis::Client::open(server.url()).unwrap()).await;
    let holder = locker(&server.url()).await;
    let waiter = locker(&server.url()).await;
    let held = holder
        .lock(KEY)
        .ttl(Duration::from_millis(800))
        .no_wait()
        .await
        .unwrap();
    let first = held.token();
    let waiting = tokio::spawn(async move { waiter.lock(KEY).wait(Duration::from_secs(20)).await });
    until_queued(std::slice::from_mut(&mut direct), KEY, 1).await;
    assert!(server.save().await, "SAVE failed");

    server.kill();
    // The holder goes with the server (else its watchdog would renew the lease
    // once the server is back): its lock frees at its lease's end.
    drop((held, holder));
    server.start_loading().await.unwrap();
    assert_eq!(
        server.ask("PING").await,
        None,
        "the server answered PING: it was not loading"
    );
    let granted = timeout(Duration::from_secs(20), waiting)
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
