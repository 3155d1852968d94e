//! The driver built on the application's own `zookeeper_client::Client`, against
//! a real ZooKeeper: it works under the client's chroot, takes the same locks as a
//! driver connected by URL, and leaves the session open when it is dropped.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::time::Duration;

use lockkit_conformance::exclude_each_other;
use lockkit_core::Locker;
use lockkit_testkit::ZooKeeper;
use lockkit_zk::{ZkDriver, ZkOptions};
use zookeeper_client::{Acls, Client, CreateMode};

const WITHIN: Duration = Duration::from_secs(15);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_of_the_application_shares_locks_under_its_chroot_and_stays_open() {
    let zk = ZooKeeper::start().await.unwrap();
    let admin = Client::connect(&zk.address()).await.unwrap();
    admin
        .create(
            "/app",
            b"",
            &CreateMode::Persistent.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();
    let client = Client::connect(&format!("{}/app", zk.address()))
        .await
        .unwrap();
    let driver = ZkDriver::from_client(client.clone(), ZkOptions::default())
        .await
        .unwrap();
    let app = Locker::new(Arc::new(driver));
    let by_url = lockkit::connect(&format!("{}/app", zk.url()))
        .await
        .unwrap();
    exclude_each_other(&app, &by_url, "orders", WITHIN)
        .await
        .unwrap();
    // lockkit's nodes are under the client's chroot.
    assert!(admin.check_stat("/app/lockkit").await.unwrap().is_some());
    let session = client.session_id();
    drop(app);
    assert!(!client.state().is_terminated());
    client
        .create(
            "/still",
            b"",
            &CreateMode::Ephemeral.with_acls(Acls::anyone_all()),
        )
        .await
        .unwrap();
    assert_eq!(client.session_id(), session);
}
