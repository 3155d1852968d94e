//! What an uncontended lock and release asks of the server, on real servers from
//! the testkit, counted by the server itself (`INFO commandstats`): a caller that
//! never queued takes a free lock with `GET`, the fencing counter and `SET` (no
//! lookup or removal of a queue entry it cannot have), and its release reads,
//! deletes and looks for waiters to wake.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit_testkit::{Redis, RedisMasters};

mod common;
use common::{admin, calls};

/// Every command the acquire and release scripts may run on the way.
const COMMANDS: [&str; 7] = ["get", "zscore", "incr", "set", "zrem", "del", "exists"];

/// One lock and release on a free key: GET, INCR and SET, then GET, DEL and
/// EXISTS.
const UNCONTENDED: [(&str, u64); 7] = [
    ("get", 2),
    ("zscore", 0),
    ("incr", 1),
    ("set", 1),
    ("zrem", 0),
    ("del", 1),
    ("exists", 1),
];

async fn counts(conn: &mut redis::aio::MultiplexedConnection) -> Vec<u64> {
    let mut out = Vec::with_capacity(COMMANDS.len());
    for command in COMMANDS {
        out.push(calls(conn, command).await);
    }
    out
}

/// The commands each server at `urls` ran for one waiting lock (it finds the key
/// free) and its release, after a first pair that warms the driver up.
async fn one_pair(locker_url: &str, urls: &[String]) -> Vec<Vec<(&'static str, u64)>> {
    let locker = lockkit::connect(locker_url).await.unwrap();
    let ttl = Duration::from_secs(30);
    locker
        .lock("stock")
        .ttl(ttl)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    let mut conns = Vec::new();
    for url in urls {
        conns.push(admin(&redis::Client::open(url.as_str()).unwrap()).await);
    }
    let mut before = Vec::new();
    for conn in &mut conns {
        before.push(counts(conn).await);
    }
    let guard = locker.lock("stock").ttl(ttl).await.unwrap();
    guard.release().await.unwrap();
    let mut ran = Vec::new();
    for (conn, before) in conns.iter_mut().zip(before) {
        let after = counts(conn).await;
        ran.push(
            COMMANDS
                .iter()
                .zip(after.iter().zip(before))
                .map(|(c, (a, b))| (*c, a - b))
                .collect(),
        );
    }
    ran
}

#[tokio::test]
async fn an_uncontended_pair_runs_six_commands_on_a_single_server() {
    let redis = Redis::start().await.unwrap();
    let ran = one_pair(&redis.url(), &[redis.url()]).await;
    assert_eq!(ran, vec![UNCONTENDED.to_vec()]);
}

#[tokio::test]
async fn an_uncontended_pair_runs_six_commands_on_each_redlock_master() {
    let masters = RedisMasters::start(5).await.unwrap();
    let url = masters.url();
    let urls: Vec<String> = url
        .trim_start_matches("redlock://")
        .split(',')
        .map(|host| format!("redis://{host}"))
        .collect();
    let ran = one_pair(&url, &urls).await;
    assert_eq!(ran, vec![UNCONTENDED.to_vec(); 5]);
}
