//! How Redlock waiters are woken, against 5 real Redis masters from the testkit: a
//! release wakes the waiter through its wake channel on the masters, long before
//! it would have retried on its own.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

mod common;
use common::redlock_locker;

use std::time::Duration;

use futures_util::StreamExt;
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

/// Waits (bounded) until `drivers` drivers' wake channels are subscribed on every
/// master.
async fn until_subscribed(conns: &mut [redis::aio::MultiplexedConnection], drivers: usize) {
    on_every_master(
        conns,
        "the drivers' wake channels",
        |mut c| {
            c.arg("PUBSUB").arg("CHANNELS").arg("lockkit:wake:*");
            c
        },
        drivers,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_wakes_the_waiter_before_it_would_retry() {
    let masters = RedisMasters::start(5).await.unwrap();
    // A mean retry of 5 s: without a wake-up the waiter would sit out seconds.
    let url = format!("{}?retry_ms=5000", masters.url());
    let (holder, waiter) = (redlock_locker(&url).await, redlock_locker(&url).await);
    let mut conns = admin(&masters).await;
    until_subscribed(&mut conns, 2).await;
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

/// Who each master woke: `(driver id, waiter id)` of the first wake-up it published
/// after this subscribes, one per master, in master order.
async fn first_wake_ups(
    masters: &RedisMasters,
) -> Vec<tokio::sync::oneshot::Receiver<(String, String)>> {
    let mut firsts = Vec::new();
    for node in &masters.nodes {
        let client = redis::Client::open(node.url()).unwrap();
        let mut pubsub = client.get_async_pubsub().await.unwrap();
        pubsub.psubscribe("lockkit:wake:*").await.unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let mut messages = pubsub.on_message();
            if let Some(m) = messages.next().await {
                let driver = m.get_channel_name().trim_start_matches("lockkit:wake:");
                let _ = tx.send((driver.to_owned(), m.get_payload().unwrap()));
            }
        });
        firsts.push(rx);
    }
    firsts
}

/// Every master orders its waiters by the rank the waiter sends, not by when its
/// entry was last refreshed there, so one release wakes the same waiter on every
/// master. Ordered by the entries' expiry, two masters here would wake the later
/// waiter, and the vote would split.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_master_wakes_the_earliest_waiter_whatever_its_entrys_expiry() {
    let masters = RedisMasters::start(5).await.unwrap();
    let url = masters.url();
    let holder = redlock_locker(&url).await;
    let (first, second) = (redlock_locker(&url).await, redlock_locker(&url).await);
    let mut conns = admin(&masters).await;
    until_subscribed(&mut conns, 3).await;
    let key = "stock:sku-11";
    let waiters = format!("lockkit:{{{key}}}:waiters");
    let held = holder.try_lock(key).await.unwrap();
    let wait_for = |locker: lockkit_core::Locker| {
        tokio::spawn(async move {
            let g = locker
                .lock(key)
                .wait(Duration::from_secs(20))
                .await
                .unwrap();
            let token = g.token().get();
            g.release().await.unwrap();
            token
        })
    };
    let earliest = wait_for(first);
    let entries = |mut c: redis::Cmd| {
        c.arg("ZRANGE").arg(&waiters).arg(0).arg(-1);
        c
    };
    on_every_master(&mut conns, "the first waiter's entry", &entries, 1).await;
    // Each master names our waiters by its own wake channel.
    let mut early = Vec::new();
    for c in &mut conns {
        let mut members: Vec<String> = entries(redis::Cmd::new()).query_async(c).await.unwrap();
        early.push(members.remove(0));
    }
    let later = wait_for(second);
    on_every_master(&mut conns, "both waiters' entries", &entries, 2).await;
    // On two masters the earlier waiter's entry now expires after the later one's,
    // as if it had refreshed there last.
    for (c, early) in conns.iter_mut().zip(&early).take(2) {
        let members: Vec<String> = entries(redis::Cmd::new()).query_async(c).await.unwrap();
        let late = members.iter().find(|m| *m != early).unwrap();
        let late_expiry: f64 = redis::cmd("ZSCORE")
            .arg(&waiters)
            .arg(late)
            .query_async(c)
            .await
            .unwrap();
        let _: i64 = redis::cmd("ZADD")
            .arg(&waiters)
            .arg("XX")
            .arg(late_expiry + 1000.0)
            .arg(early)
            .query_async(c)
            .await
            .unwrap();
    }
    let woken = first_wake_ups(&masters).await;
    let token = held.token().get();
    held.release().await.unwrap();
    for (i, (rx, early)) in woken.into_iter().zip(&early).enumerate() {
        let (driver, waiter) = early.split_once(':').unwrap();
        let got = tokio::time::timeout(Duration::from_secs(10), rx)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            got,
            (driver.to_owned(), waiter.to_owned()),
            "master {i} woke another waiter than the earliest"
        );
    }
    let (earlier_token, later_token) = (earliest.await.unwrap(), later.await.unwrap());
    assert!(token < earlier_token && earlier_token < later_token);
}
