//! Leaving a semaphore, as Consul's recipe does: the session is removed from the
//! `.lock` record by check-and-set, and its contender key deleted — here in one
//! transaction, so a waiter never sees one without the other. Also the
//! operator's break-glass over every holder of a semaphore.

use lockkit_core::{LockError, LockKey, Result};

use crate::api::Api;
use crate::driver::NAME;
use crate::keys::SemaphoreKeys;
use crate::permit_sessions::PermitSessions;
use crate::semaphore::Snapshot;
use crate::session::retire;
use crate::txn_ops::{TxnOp, TxnOutcome};

/// How many times a write of the record is tried against a record that keeps
/// changing (each failure means another contender's write got in first).
const CAS_RETRIES: usize = 16;
/// How many operations one transaction takes (Consul's limit).
const TXN_MAX_OPS: usize = 64;

/// Takes `session` out of the semaphore: out of the record (pruning dead holders
/// on the way) and its contender key deleted. Returns whether it held a slot.
///
/// # Errors
///
/// A request that failed, or a record that changed under every attempt.
pub(crate) async fn leave(api: &Api, keys: &SemaphoreKeys, session: &str) -> Result<bool> {
    for _ in 0..CAS_RETRIES {
        let seen = Snapshot::read(api, keys, None).await?;
        let held = seen.holders().any(|(s, _)| s == session);
        let mut ops = Vec::new();
        if let Some(limit) = seen.limit().filter(|_| seen.lists(session)) {
            let record = seen.record_after(limit, None, Some(session));
            ops.extend(seen.write_record(keys, &record));
        }
        ops.push(TxnOp::delete(&keys.contender(session)));
        if let TxnOutcome::Applied(_) = api.txn(&ops).await? {
            return Ok(held);
        }
    }
    Err(raced("leaving"))
}

/// Gives `session` back to the pool after a permit of `key` ended, and destroys
/// it if it is a spare nothing uses any more.
pub(crate) fn give_back(api: &Api, pool: &PermitSessions, key: &LockKey, session: &str) {
    if let Some(spare) = pool.put_back(key, session) {
        retire(api, spare);
    }
}

/// Frees every slot of the semaphore whoever holds it: the record deleted and the
/// holders' contender keys with it (waiters keep theirs). The holders learn at
/// their next renewal. Returns whether there was a holder.
///
/// # Errors
///
/// A request that failed, or a record that changed under every attempt.
pub(crate) async fn force_release_permits(api: &Api, keys: &SemaphoreKeys) -> Result<bool> {
    let mut freed = false;
    for _ in 0..CAS_RETRIES {
        let seen = Snapshot::read(api, keys, None).await?;
        let holders: Vec<String> = seen.holders().map(|(s, _)| s.to_owned()).collect();
        if holders.is_empty() {
            return Ok(freed);
        }
        // Past one transaction's worth, the holders' keys go first (each is then
        // a dead holder); the last transaction deletes the record with the rest.
        let last = holders.len() + 2 <= TXN_MAX_OPS;
        let mut ops = Vec::new();
        if last {
            ops.push(TxnOp::check_index(&keys.record, seen.record_index));
            ops.push(TxnOp::delete(&keys.record));
        }
        ops.extend(
            holders
                .iter()
                .take(TXN_MAX_OPS)
                .map(|s| TxnOp::delete(&keys.contender(s))),
        );
        if let TxnOutcome::Applied(_) = api.txn(&ops).await? {
            freed = true;
            if last {
                return Ok(true);
            }
        }
    }
    Err(raced("force-releasing"))
}

fn raced(what: &str) -> LockError {
    LockError::Backend {
        driver: NAME,
        message: format!(
            "{what} a semaphore: its `.lock` record changed under {CAS_RETRIES} check-and-set attempts in a row"
        ),
        source: None,
    }
}
