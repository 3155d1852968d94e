//! Redlock masters that lost their script cache (a restart, `SCRIPT FLUSH`), on 5
//! real Redis masters from the testkit: every script call loads its script there
//! again and goes on.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit_testkit::RedisMasters;

mod common;
use common::{admin, redlock_locker};

/// `SCRIPT FLUSH` on every master: each forgets every script the driver loaded.
async fn flush_scripts(masters: &RedisMasters) {
    for node in &masters.nodes {
        let client = redis::Client::open(node.url()).unwrap();
        let mut conn = admin(&client).await;
        let () = redis::cmd("SCRIPT")
            .arg("FLUSH")
            .query_async(&mut conn)
            .await
            .unwrap();
    }
}

/// Whether `name` exists on each master.
async fn exists_on_each(masters: &RedisMasters, name: &str) -> Vec<bool> {
    let mut found = Vec::new();
    for node in &masters.nodes {
        let client = redis::Client::open(node.url()).unwrap();
        let mut conn = admin(&client).await;
        let n: i64 = redis::cmd("EXISTS")
            .arg(name)
            .query_async(&mut conn)
            .await
            .unwrap();
        found.push(n == 1);
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn masters_that_forgot_the_scripts_still_grant_extend_and_release() {
    let masters = RedisMasters::start(5).await.unwrap();
    let key = "orders:flushed";
    let lock = format!("lockkit:{{{key}}}:lock");
    let l = redlock_locker(&masters.url()).await;
    let first = l.try_lock(key).await.unwrap();
    let first_token = first.token().get();
    first.release().await.unwrap();

    flush_scripts(&masters).await;
    let g = l.try_lock(key).await.unwrap();
    assert!(
        g.token().get() > first_token,
        "a newer token after the flush"
    );
    assert_eq!(exists_on_each(&masters, &lock).await, vec![true; 5]);

    flush_scripts(&masters).await;
    g.extend(Duration::from_secs(20)).await.unwrap();

    flush_scripts(&masters).await;
    g.release().await.unwrap();
    assert_eq!(exists_on_each(&masters, &lock).await, vec![false; 5]);
}
