//! Helpers shared by the etcd test binaries.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;

use lockkit_core::Locker;
use lockkit_etcd::{EtcdDriver, EtcdOptions};

/// A `Locker` on a new driver connected to `url`.
pub(crate) async fn locker(url: &str) -> Locker {
    Locker::new(Arc::new(
        EtcdDriver::connect(EtcdOptions::from_url(url).unwrap())
            .await
            .unwrap(),
    ))
}
