//! The driver built on the application's own `reqwest::Client`, against the
//! testkit's Consul stand-in (no Consul agent can be installed here): it takes the
//! same locks as a driver connected by URL, sends every request through that
//! client (only the client carries the ACL token), and leaves it working.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::time::Duration;

use lockkit_conformance::exclude_each_other;
use lockkit_consul::{ConsulDriver, ConsulOptions};
use lockkit_core::Locker;
use lockkit_testkit::{ConsulStandIn, StandInOptions};

const WITHIN: Duration = Duration::from_secs(15);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_of_the_application_carries_the_locks_and_stays_usable() {
    let consul = ConsulStandIn::start_with(StandInOptions::default().with_acl_token("s3cret"))
        .await
        .unwrap();
    // The ACL token is only in the application's client (a default header), not
    // in the options: every request the driver sends must go through that client.
    // This workspace builds reqwest without a crypto provider of its own, as an
    // application may: it installs one before building a client.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("X-Consul-Token", "s3cret".parse().unwrap());
    let http = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap();
    let options =
        ConsulOptions::from_url(&format!("consul://{}?prefix=app", consul.addr())).unwrap();
    let driver = ConsulDriver::from_client(http.clone(), options)
        .await
        .unwrap();
    let app = Locker::new(Arc::new(driver));
    let by_url = lockkit::connect(&format!("consul://s3cret@{}?prefix=app", consul.addr()))
        .await
        .unwrap();
    exclude_each_other(&app, &by_url, "orders", WITHIN)
        .await
        .unwrap();
    drop(app);
    let leader = http
        .get(format!("http://{}/v1/status/leader", consul.addr()))
        .send()
        .await
        .unwrap();
    assert!(leader.status().is_success());
}
