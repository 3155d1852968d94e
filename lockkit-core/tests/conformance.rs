//! The conformance suite against the `mem://` reference driver.

use std::sync::Arc;

use lockkit_conformance::{Harness, Skips, TestHarness};
use lockkit_core::mem::MemDriver;
use lockkit_core::{Capabilities, Inspect, LockDriver, LockError, LockKey, OwnerId, WakeUp};

/// A private named store per test; every `driver()` is a new driver over it.
struct MemHarness {
    name: String,
    store: MemDriver,
}

#[lockkit_core::async_trait]
impl Harness for MemHarness {
    async fn driver(&self) -> Result<Arc<dyn LockDriver>, LockError> {
        Ok(Arc::new(MemDriver::named(&self.name)))
    }

    async fn vanish(&self, key: &LockKey) -> Result<(), LockError> {
        self.store.force_release(key).await.map(|_| ())
    }
}

#[lockkit_core::async_trait]
impl TestHarness for MemHarness {
    async fn start() -> Self {
        let name = format!("conformance-{}", OwnerId::new().to_hex());
        let store = MemDriver::named(&name);
        Self { name, store }
    }

    async fn connect(_url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
        Err(LockError::Config("mem holds are process-local".into()))
    }
}

/// What `MemDriver::capabilities` reports: every optional case runs.
const MEM: Capabilities = Capabilities::baseline()
    .with_shared(true)
    .with_permits(true)
    .with_inspect(Inspect::HoldersAndWaiters)
    .with_fair(true)
    .with_cross_process(false)
    .with_wake_up(WakeUp::Notify)
    .with_proclaim(true)
    .with_list(true)
    .with_watch(true)
    .with_several_keys_at_once(true);

const PROCESS_LOCAL: Skips = &[
    (
        "abandoned_by_killed_process_is_freed_after_ttl",
        "mem:// holds are process-local; a child process cannot share them",
    ),
    (
        "a_killed_leader_is_replaced_within_its_lease",
        "mem:// holds are process-local; a child process cannot lead",
    ),
];

lockkit_conformance::main! {
    mem: MemHarness, claims MEM, skip PROCESS_LOCAL;
}
