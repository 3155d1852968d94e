//! A waiter's lease revoked behind its back on a real etcd 3.4 server (by an
//! operator, or a lease that ran out): the revocation takes the waiter's entry
//! with it, and when the release wakes the waiter it must queue again on a live
//! lease, never report a grant on the revoked one (etcd issue 11456: a recipe that
//! trusted its predecessor's delete granted on a dead lease).

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use etcd_client::{Client, GetOptions, SortOrder, SortTarget};
use lockkit_testkit::Etcd;

const KEY: &str = "revoked-waiter";

/// The lease of each entry in the lock's queue, oldest first.
async fn queue_leases(raw: &mut Client) -> Vec<i64> {
    let opts = GetOptions::new()
        .with_prefix()
        .with_sort(SortTarget::Create, SortOrder::Ascend);
    let resp = raw
        .get(format!("lockkit/{KEY}/"), Some(opts))
        .await
        .unwrap();
    resp.kvs().iter().map(|kv| kv.lease()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_lease_was_revoked_is_granted_only_on_a_live_lease() {
    let etcd = Etcd::start().await.unwrap();
    let url = etcd.url();
    let endpoint = url.replace("etcd://", "http://");
    let mut raw = Client::connect([endpoint.as_str()], None).await.unwrap();
    let (holder, waiter) = (
        lockkit::connect(&url).await.unwrap(),
        lockkit::connect(&url).await.unwrap(),
    );
    let held = holder
        .lock(KEY)
        .ttl(Duration::from_secs(30))
        .no_wait()
        .await
        .unwrap();
    // A 30 s lease: the waiter renews it every 10 s, so nothing but the wake-up
    // makes it look at its lease within the test.
    let waiting = tokio::spawn(async move {
        waiter
            .lock(KEY)
            .ttl(Duration::from_secs(30))
            .wait(Duration::from_secs(20))
            .await
    });
    lockkit_conformance::until_waiters(&holder, KEY, 1, Duration::from_secs(10))
        .await
        .unwrap();
    let leases = queue_leases(&mut raw).await;
    let [_, revoked] = leases[..] else {
        panic!("the queue with the waiter in it: {leases:?}, not two entries");
    };
    raw.lease_revoke(revoked).await.unwrap();
    assert_eq!(
        queue_leases(&mut raw).await.len(),
        1,
        "the revoked lease took the waiter's entry with it"
    );
    let held_token = held.token();
    held.release().await.unwrap();

    let granted = waiting.await.unwrap().unwrap();
    assert!(granted.token() > held_token);
    assert!(!granted.is_lost(), "the grant reports itself lost");
    let leases = queue_leases(&mut raw).await;
    let [live] = leases[..] else {
        panic!("the queue after the grant: {leases:?}, not the one new entry");
    };
    assert_ne!(live, revoked, "granted on the revoked lease");
    let ttl = raw.lease_time_to_live(live, None).await.unwrap().ttl();
    assert!(ttl > 0, "granted on a lease with {ttl} s left");
    granted.release().await.unwrap();
}

/// Lease keep-alive messages the server has received (its `/metrics`).
async fn keep_alives(etcd: &Etcd) -> u64 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = etcd.url().replace("etcd://", "");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let mut body = String::new();
    stream.read_to_string(&mut body).await.unwrap();
    body.lines()
        .filter(|l| {
            l.starts_with("grpc_server_msg_received_total{")
                && l.contains("grpc_method=\"LeaseKeepAlive\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// A woken waiter whose lease had a keep-alive round in the last third of its
/// TTL (here: the lease's grant, as it queued) trusts it, and reads the queue
/// with no keep-alive round of its own: one round trip less per hand-off. Its
/// grant still has at least 2/3 of the TTL left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_woken_waiter_confirms_its_lease_by_a_recent_round_and_sends_none() {
    let etcd = Etcd::start().await.unwrap();
    let url = etcd.url();
    let ttl = Duration::from_secs(30);
    let (holder, waiter) = (
        lockkit::connect(&url).await.unwrap(),
        lockkit::connect(&url).await.unwrap(),
    );
    let held = holder.lock(KEY).ttl(ttl).no_wait().await.unwrap();
    let waiting = tokio::spawn(async move {
        waiter
            .lock(KEY)
            .ttl(ttl)
            .wait(Duration::from_secs(20))
            .await
    });
    lockkit_conformance::until_waiters(&holder, KEY, 1, Duration::from_secs(10))
        .await
        .unwrap();
    let before = keep_alives(&etcd).await;
    held.release().await.unwrap();
    let granted = waiting.await.unwrap().unwrap();
    assert_eq!(
        keep_alives(&etcd).await,
        before,
        "the woken waiter sent a keep-alive round"
    );
    let left = granted.deadline() - tokio::time::Instant::now();
    assert!(
        left >= ttl * 2 / 3 - Duration::from_secs(1),
        "{left:?} left"
    );
    granted.release().await.unwrap();
}
