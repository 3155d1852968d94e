//! The driver built on the application's own `etcd_client::Client`, against a
//! real etcd: it takes the same locks as a driver connected by URL, and leaves the
//! client working when it is dropped.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::time::Duration;

use lockkit_conformance::exclude_each_other;
use lockkit_core::{LockError, Locker};
use lockkit_etcd::{EtcdDriver, EtcdOptions};
use lockkit_testkit::Etcd;

const WITHIN: Duration = Duration::from_secs(15);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_of_the_application_shares_locks_and_stays_usable() {
    let etcd = Etcd::start().await.unwrap();
    let endpoint = etcd.url().replace("etcd://", "http://");
    let connect = etcd_client::ConnectOptions::new().with_require_leader(true);
    let client = etcd_client::Client::connect([endpoint.as_str()], Some(connect))
        .await
        .unwrap();
    let options = EtcdOptions::default().with_prefix("app/").unwrap();
    assert_eq!(options.prefix(), "app");
    let driver = EtcdDriver::from_client(client.clone(), options)
        .await
        .unwrap();
    let app = Locker::new(Arc::new(driver));
    let by_url = lockkit::connect(&format!("{}?prefix=app", etcd.url()))
        .await
        .unwrap();
    exclude_each_other(&app, &by_url, "orders", WITHIN)
        .await
        .unwrap();
    drop(app);
    let mut kv = client.kv_client();
    kv.put("still", "here", None).await.unwrap();
    let got = kv.get("still", None).await.unwrap();
    assert_eq!(got.kvs()[0].value(), b"here");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_reaches_no_cluster_fails_at_construction() {
    let port = lockkit_testkit::free_port().unwrap();
    let client = etcd_client::Client::connect([format!("http://127.0.0.1:{port}")], None)
        .await
        .unwrap();
    match EtcdDriver::from_client(client, EtcdOptions::default()).await {
        Err(LockError::Connection { .. }) => {}
        other => panic!("a client of a dead endpoint: {:?}", other.map(|_| ())),
    }
}
