//! Figures for the issue note, against one throwaway etcd node. Ignored by default
//! (they measure, they do not check); run with
//! `cargo nextest run -p lockkit-etcd --test measure --run-ignored only --no-capture`.

use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Compare, CompareOp, Txn, TxnOp};
use lockkit_core::{LockError, Locker};
use lockkit_etcd::{EtcdDriver, EtcdOptions};
use lockkit_testkit::Etcd;
use tokio::time::{Instant, sleep, timeout};

const ROUNDS: usize = 500;

fn percentiles(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    let at = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    (at(0.50), at(0.99))
}

async fn driver(url: &str) -> Result<Arc<EtcdDriver>, LockError> {
    Ok(Arc::new(
        EtcdDriver::connect(EtcdOptions::from_url(url)?).await?,
    ))
}

/// Uncontended `try_lock` + `release` through the driver, against the floor of one
/// raw txn (put if create_revision is 0) plus one delete on the same server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run with --run-ignored only --no-capture"]
async fn uncontended_lock_release_against_raw_txn_and_delete() {
    let etcd = Etcd::start().await.unwrap();
    let d = driver(&etcd.url()).await.unwrap();
    let locker = Locker::new(d.clone());
    for _ in 0..20 {
        locker
            .try_lock("warm")
            .await
            .unwrap()
            .release()
            .await
            .unwrap();
    }
    let mut lock = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let t = Instant::now();
        let g = locker.try_lock("uncontended").await.unwrap();
        g.release().await.unwrap();
        lock.push(t.elapsed());
    }
    let raw_client = EtcdOptions::from_url(&etcd.url())
        .unwrap()
        .connect_client()
        .await
        .unwrap();
    let mut kv = raw_client.kv_client();
    let mut raw = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let t = Instant::now();
        let txn = Txn::new()
            .when([Compare::create_revision("raw/key", CompareOp::Equal, 0)])
            .and_then([TxnOp::put("raw/key", "", None)]);
        assert!(kv.txn(txn).await.unwrap().succeeded());
        kv.delete("raw/key", None).await.unwrap();
        raw.push(t.elapsed());
    }
    let (lp50, lp99) = percentiles(lock);
    let (rp50, rp99) = percentiles(raw);
    eprintln!(
        "etcd uncontended, {ROUNDS} rounds: lock+release p50 {lp50:?} p99 {lp99:?}; raw txn+delete p50 {rp50:?} p99 {rp99:?}; ratio at p50 {:.2}",
        lp50.as_secs_f64() / rp50.as_secs_f64()
    );
}

/// Hand-off: from the holder's release call to the waiter's grant (the waiter is
/// already queued and watching its predecessor).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run with --run-ignored only --no-capture"]
async fn hand_off_latency() {
    const HANDOFFS: usize = 200;
    let etcd = Etcd::start().await.unwrap();
    let holder = Locker::new(driver(&etcd.url()).await.unwrap());
    let waiter = Locker::new(driver(&etcd.url()).await.unwrap());
    let mut lat = Vec::with_capacity(HANDOFFS);
    for _ in 0..HANDOFFS {
        let g = holder.try_lock("handoff").await.unwrap();
        let w = waiter.clone();
        let task = tokio::spawn(async move {
            let g = w
                .lock("handoff")
                .wait(Duration::from_secs(10))
                .await
                .unwrap();
            (Instant::now(), g)
        });
        // Wait until the waiter is queued (it is measured from the release, so
        // the hand-off starts from a queued waiter).
        timeout(Duration::from_secs(10), async {
            while holder.inspect("handoff").await.unwrap().waiters != Some(1) {
                sleep(Duration::from_millis(2)).await;
            }
        })
        .await
        .expect("the waiter did not queue within 10 s");
        let released = Instant::now();
        g.release().await.unwrap();
        let (granted, g2) = task.await.unwrap();
        lat.push(granted - released);
        g2.release().await.unwrap();
    }
    let (p50, p99) = percentiles(lat);
    eprintln!("etcd hand-off, {HANDOFFS} hand-offs: p50 {p50:?} p99 {p99:?}");
}
