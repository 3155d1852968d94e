//! `fence_seed`, on real servers from the testkit: what tokens do when Redis
//! loses the counter's last bumps, as a restart without persistence does (the
//! counter gone) or a failover to a replica that lagged (the counter behind).
//! Both are made here by writing the counter by hand between two grants.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use lockkit_core::{FencingToken, LockGuard, Locker};
use lockkit_testkit::{Redis, RedisMasters};

async fn locker(url: &str) -> Locker {
    lockkit::connect(url).await.unwrap()
}

async fn conn(port: u16) -> redis::aio::MultiplexedConnection {
    redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// Sets the fencing counter of `key` on the server on `port` back to `to`, or
/// deletes it for `None`.
async fn set_counter(port: u16, key: &str, to: Option<u64>) {
    let mut c = conn(port).await;
    let counter = format!("lockkit:{{{key}}}:fence");
    let cmd = match to {
        Some(v) => redis::cmd("SET").arg(&counter).arg(v).clone(),
        None => redis::cmd("DEL").arg(&counter).clone(),
    };
    let _: () = cmd.query_async(&mut c).await.unwrap();
}

/// One grant of each mode on `key`, released: a lock, a read lock, a permit.
async fn grant_each_mode(locker: &Locker, key: &str) -> Vec<LockGuard> {
    let lock = locker.try_lock(format!("{key}/lock")).await.unwrap();
    let read = locker.read_lock(format!("{key}/read"));
    let read = read.no_wait().await.unwrap();
    let permits = locker.semaphore(format!("{key}/permit"), 2);
    let permit = permits.try_acquire().await.unwrap();
    vec![lock, read, permit]
}

/// The tokens of one grant of each mode, after each key's counter was set by
/// `set_back` between a first grant and a second.
async fn tokens_across(
    url: &str,
    port: u16,
    set_back: Option<u64>,
) -> Vec<(FencingToken, FencingToken)> {
    let locker = locker(url).await;
    let mut pairs = Vec::new();
    let first = grant_each_mode(&locker, "stock").await;
    for g in &first {
        set_counter(port, g.key().as_str(), set_back).await;
    }
    let before: Vec<FencingToken> = first.iter().map(LockGuard::token).collect();
    for g in first {
        g.release().await.unwrap();
    }
    let second = grant_each_mode(&locker, "stock").await;
    for (g, before) in second.into_iter().zip(before) {
        pairs.push((before, g.token()));
        g.release().await.unwrap();
    }
    pairs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clock_tokens_rise_over_a_counter_set_back_or_lost() {
    let server = Redis::start().await.unwrap();
    let url = format!("{}?fence_seed=clock", server.url());
    for set_back in [Some(1), None] {
        for (before, after) in tokens_across(&url, server.port(), set_back).await {
            assert!(after > before, "{set_back:?}: {after} after {before}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counter_tokens_repeat_when_the_counter_is_set_back() {
    // The default's documented weakness, which `fence_seed=clock` exists for.
    let server = Redis::start().await.unwrap();
    for (before, after) in tokens_across(&server.url(), server.port(), Some(0)).await {
        assert!(after <= before, "{after} after {before}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_clock_tokens_rise_over_counters_set_back_on_every_master() {
    let masters = RedisMasters::start(3).await.unwrap();
    let locker = locker(&format!("{}?fence_seed=clock", masters.url())).await;
    let first = locker.try_lock("stock").await.unwrap();
    let before = first.token();
    first.release().await.unwrap();
    for node in &masters.nodes {
        set_counter(node.port(), "stock", Some(1)).await;
    }
    let second = locker.try_lock("stock").await.unwrap();
    assert!(second.token() > before, "{} after {before}", second.token());
    second.release().await.unwrap();
}
