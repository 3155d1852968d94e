//! Inspection: one read of the lock key and one of the semaphore's keys, taken
//! together. The lock key's holder is an exclusive holder (its token the key's
//! `ModifyIndex`); each live session in the semaphore's record holds a permit
//! (its token its contender key's `ModifyIndex`, written by the transaction that
//! gave it the slot). Labels come from the values the driver writes. Holds are
//! session-bound, so no lease is shown.
//!
//! Waiters are counted for a semaphore (contender keys without a slot), not for a
//! lock: a lock's waiters leave nothing in Consul, so the driver's capabilities say
//! [`Inspect::Holders`](lockkit_core::driver::Inspect::Holders).

use lockkit_core::driver::{Holder, Inspection};
use lockkit_core::{FencingToken, LockKey, LockMode, Result};

use crate::driver::ConsulDriver;
use crate::keys::SemaphoreKeys;
use crate::semaphore::Snapshot;
use crate::values::HoldValue;

/// The holders of `key`, in either mode.
pub(crate) async fn inspect(driver: &ConsulDriver, key: &LockKey) -> Result<Inspection> {
    let kv_key = driver.kv_key(key);
    let keys = SemaphoreKeys::of(&kv_key);
    let (lock, semaphore) = tokio::join!(
        driver.api().kv_get(&kv_key, None),
        Snapshot::read(driver.api(), &keys, None)
    );
    let (lock, _) = lock?;
    let semaphore = semaphore?;
    let label = |value: Option<Vec<u8>>| HoldValue::parse(value.as_deref()).and_then(|v| v.label);
    let mut holders = Vec::new();
    if let Some(e) = lock.filter(|e| e.session.is_some()) {
        holders.push(
            Holder::new(LockMode::Exclusive, FencingToken(e.modify_index))
                .with_label(label(e.value())),
        );
    }
    if semaphore.record_locked {
        // `consul lock <prefix>` holding `.lock` as a plain lock.
        holders.push(Holder::new(
            LockMode::Exclusive,
            FencingToken(semaphore.record_index),
        ));
    }
    if let Some(limit) = semaphore.limit_in_use() {
        for (_, e) in semaphore.holders() {
            holders.push(
                Holder::new(LockMode::Permit { limit }, FencingToken(e.modify_index))
                    .with_label(label(e.value())),
            );
        }
    }
    let seen = Inspection::free(key.clone()).with_holders(holders);
    let waiters = semaphore.waiters().len();
    Ok(if semaphore.limit().is_some() || waiters > 0 {
        seen.with_waiters(waiters)
    } else {
        seen
    })
}
