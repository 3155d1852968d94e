//! The conformance suite against the `mem://` reference driver.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;

use lockkit_conformance::{Harness, TestHarness};
use lockkit_core::mem::MemDriver;
use lockkit_core::{LockDriver, LockError, LockKey, OwnerId};

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

lockkit_conformance::suite!(
    mem,
    MemHarness,
    skip {
        abandoned_by_killed_process_is_freed_after_ttl: "mem:// holds are process-local; a child process cannot share them",
        a_killed_leader_is_replaced_within_its_lease: "mem:// holds are process-local; a child process cannot lead",
    },
    with {
        fifo_order,
        readers_share,
        writer_excludes_readers_and_writers,
        read_write_order_is_fifo,
        read_hold_is_not_upgraded,
        at_most_limit_permits_under_contention,
        permit_tokens_increase_across_permits,
        an_expired_permit_is_reacquirable,
        a_permit_limit_mismatch_is_a_config_error,
        a_release_wakes_one_waiter,
        a_cancelled_permit_acquire_leaves_nothing,
        inspection_shows_holder_mode_token_and_lease,
        a_free_key_inspects_empty,
        the_leader_is_shown_with_its_value_term_and_label,
        observe_sees_every_change_in_order,
        observe_wakes_on_the_backend_signal,
        held_locks_are_listed_by_prefix,
        proclaim_is_seen_by_leader_and_observe,
        inspection_counts_waiters,
    }
);
