//! How Redlock waiters are woken, against 5 real Redis masters from the testkit: a
//! release wakes the waiter through its wake channel on the masters, long before
//! it would have retried on its own.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

mod common;
use common::redlock_locker;

use std::time::Duration;

use lockkit_testkit::RedisMasters;
use tokio::time::Instant;

/// With wake-ups from a quorum, a waiter retries on its own after 0.5–1.5 s (the
/// fallback), never sooner: a hand-off faster than this came from a wake-up.
const EARLIEST_OWN_RETRY: Duration = Duration::from_millis(500);

async fn admin(masters: &RedisMasters) -> Vec<redis::aio::MultiplexedConnection> {
    let mut conns = Vec::new();
    for node in &masters.nodes {
        let client = redis::Client::open(node.url()).unwrap();
        conns.push(common::admin(&client).await);
    }
    conns
}

/// Waits (bounded) until `check` holds on every master.
async fn on_every_master(
    conns: &mut [redis::aio::MultiplexedConnection],
    what: &str,
    check: impl Fn(redis::Cmd) -> redis::Cmd,
    want: usize,
) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut all = true;
        for c in conns.iter_mut() {
            let n: usize = match check(redis::Cmd::new())
                .query_async::<redis::Value>(c)
                .await
            {
                Ok(redis::Value::Array(items)) => items.len(),
                Ok(redis::Value::Int(n)) => usize::try_from(n).unwrap_or(0),
                _ => 0,
            };
            all &= n == want;
        }
        if all {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not on every master within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_wakes_the_waiter_before_it_would_retry() {
    let masters = RedisMasters::start(5).await.unwrap();
    // A mean retry of 5 s: without a wake-up the waiter would sit out seconds.
    let url = format!("{}?retry_ms=5000", masters.url());
    let (holder, waiter) = (redlock_locker(&url).await, redlock_locker(&url).await);
    let mut conns = admin(&masters).await;
    on_every_master(
        &mut conns,
        "both drivers' wake channels",
        |mut c| {
            c.arg("PUBSUB").arg("CHANNELS").arg("lockkit:wake:*");
            c
        },
        2,
    )
    .await;
    let key = "stock:sku-9";
    let held = holder.try_lock(key).await.unwrap();
    let waiting = tokio::spawn(async move {
        let g = waiter
            .lock(key)
            .wait(Duration::from_secs(20))
            .await
            .unwrap();
        let granted = Instant::now();
        let token = g.token().get();
        g.release().await.unwrap();
        (granted, token)
    });
    on_every_master(
        &mut conns,
        "the waiter's entry",
        |mut c| {
            c.arg("ZCARD").arg(format!("lockkit:{{{key}}}:waiters"));
            c
        },
        1,
    )
    .await;
    let first = held.token().get();
    let released = Instant::now();
    held.release().await.unwrap();
    let (granted, token) = waiting.await.unwrap();
    let handoff = granted.duration_since(released);
    assert!(
        handoff < EARLIEST_OWN_RETRY,
        "hand-off took {handoff:?}: the waiter was not woken"
    );
    assert!(token > first, "tokens {first} then {token}");
}
