//! A waiter while it cannot get an answer from Consul, on the testkit's stand-in
//! (see conformance_consul.rs for why a stand-in): the agent out of reach (a
//! partition through the testkit's proxy), or Consul's servers without a leader.
//! Either way the wait goes on, as on every backend, and ends in a grant.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::time::Duration;

use lockkit_consul::{ConsulDriver, ConsulOptions};
use lockkit_core::{FencingToken, LockError, LockGuard, Locker};
use lockkit_testkit::{ConsulStandIn, Fault, FaultProxy};
use tokio::time::{Instant, timeout};

async fn locker(url: &str) -> Locker {
    let options = ConsulOptions::from_url(url).unwrap();
    Locker::new(Arc::new(ConsulDriver::connect(options).await.unwrap()))
}

/// Waits (at most 20 s) for `waiting` to be granted, checks that its token is
/// above `first` (the holder's, before the fault), and releases.
async fn granted_above(
    waiting: tokio::task::JoinHandle<Result<LockGuard, LockError>>,
    first: FencingToken,
    when: &str,
) {
    let granted = timeout(Duration::from_secs(20), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        granted.token() > first,
        "{when}: token {}, the holder's {first}",
        granted.token()
    );
    granted.release().await.unwrap();
}

/// The two kinds of waiter the partition test runs: a lock's and a permit's
/// (a semaphore of one).
#[derive(Clone, Copy, Debug)]
enum Waits {
    ForLock,
    ForPermit,
}

impl Waits {
    async fn take(self, locker: &Locker, wait: Option<Duration>) -> Result<LockGuard, LockError> {
        const KEY: &str = "reach";
        match (self, wait) {
            (Waits::ForLock, Some(d)) => locker.lock(KEY).wait(d).await,
            (Waits::ForLock, None) => locker.lock(KEY).no_wait().await,
            (Waits::ForPermit, Some(d)) => locker.semaphore(KEY, 1).acquire().wait(d).await,
            (Waits::ForPermit, None) => locker.semaphore(KEY, 1).acquire().no_wait().await,
        }
    }
}

/// A waiter whose connections to the agent break, and which then cannot reach it
/// for longer than its request timeout (a partition, through the testkit's
/// proxy): its attempts meanwhile fail with connection errors, which are
/// transient within the wait, as on every other backend. Once the agent is in
/// reach again, the waiter is granted what its holder released meanwhile, with a
/// higher token.
async fn a_waiter_outlasts_an_agent_out_of_reach(waits: Waits) {
    // Past the waiter's request timeout (200 ms below) several times over: the
    // fault's length, not a wait for a state.
    const OUT_OF_REACH: Duration = Duration::from_millis(1500);
    let consul = ConsulStandIn::start().await.unwrap();
    let proxy = FaultProxy::start(consul.port()).await.unwrap();
    let holder = locker(&consul.url()).await;
    let waiter = locker(&format!(
        "consul://127.0.0.1:{}?request_timeout_ms=200",
        proxy.port()
    ))
    .await;
    let held = waits.take(&holder, None).await.unwrap();
    let first = held.token();
    let txns = consul.requests("PUT", "/v1/txn");
    let waiting =
        tokio::spawn(async move { waits.take(&waiter, Some(Duration::from_secs(20))).await });
    // The waiter's first attempt was refused: it waits now.
    let until = Instant::now() + Duration::from_secs(10);
    while consul.requests("PUT", "/v1/txn") == txns {
        assert!(Instant::now() < until, "the waiter never attempted");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    proxy.set(Fault::BlackHole);
    proxy.reset();
    held.release().await.unwrap();
    tokio::time::sleep(OUT_OF_REACH).await;
    if waiting.is_finished() {
        panic!(
            "{waits:?}: the waiter gave up while the agent was out of reach: {:?}",
            waiting.await
        );
    }
    proxy.set(Fault::Forward);
    granted_above(waiting, first, &format!("{waits:?}, after the partition")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_waiter_outlasts_an_agent_out_of_reach() {
    a_waiter_outlasts_an_agent_out_of_reach(Waits::ForLock).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_waiter_outlasts_an_agent_out_of_reach() {
    a_waiter_outlasts_an_agent_out_of_reach(Waits::ForPermit).await;
}

/// Consul's servers lose their leader under a waiter: every request is answered
/// `500 No cluster leader` while they elect one (seconds, in a real cluster).
/// The waiter's attempts meanwhile are transient: it keeps trying (the test
/// waits for two refused lock transactions), and once a leader is back it is
/// granted the lock its holder then releases, with a higher token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_outlasts_a_leader_election() {
    let consul = ConsulStandIn::start().await.unwrap();
    // The waiter reaches the agent through the proxy, so that resetting its
    // connections ends its blocking query and it attempts during the election.
    let proxy = FaultProxy::start(consul.port()).await.unwrap();
    let holder = locker(&consul.url()).await;
    let waiter = locker(&format!("consul://127.0.0.1:{}", proxy.port())).await;
    let held = holder.lock("elected").no_wait().await.unwrap();
    let first = held.token();
    let txns = consul.requests("PUT", "/v1/txn");
    let waiting =
        tokio::spawn(async move { waiter.lock("elected").wait(Duration::from_secs(20)).await });
    let until = Instant::now() + Duration::from_secs(10);
    while consul.requests("PUT", "/v1/txn") == txns {
        assert!(Instant::now() < until, "the waiter never attempted");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    consul.lose_leader();
    proxy.reset();
    // Two lock transactions refused: the first refusal did not end the wait.
    let refused = consul.requests("PUT", "/v1/txn");
    let until = Instant::now() + Duration::from_secs(10);
    while consul.requests("PUT", "/v1/txn") < refused + 2 {
        if waiting.is_finished() {
            panic!(
                "the waiter gave up during the election: {:?}",
                waiting.await
            );
        }
        assert!(Instant::now() < until, "the waiter stopped attempting");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    consul.elect_leader();
    held.release().await.unwrap();
    granted_above(waiting, first, "after the election").await;
}
