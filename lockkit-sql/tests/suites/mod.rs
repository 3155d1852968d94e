//! What the SQL conformance files share: the lease tables' claims, and the cases
//! session-bound locks skip.

// Each test file uses some of these.
#![allow(dead_code)]

use lockkit_conformance::Skips;
use lockkit_core::{Capabilities, Inspect, WakeUp};

/// A lease table's, polled: every mode, inspection of holders, elections and
/// listing; waiters neither counted nor served in order.
pub(crate) const LEASES: Capabilities = Capabilities::baseline()
    .with_shared(true)
    .with_permits(true)
    .with_inspect(Inspect::Holders)
    .with_proclaim(true)
    .with_list(true)
    .with_transaction_locks(true);

/// A lease table whose waiters queue: counted, and served in arrival order when
/// they ask for it; several free keys are taken in one transaction.
pub(crate) const QUEUED_LEASES: Capabilities = LEASES
    .with_inspect(Inspect::HoldersAndWaiters)
    .with_fair_on_request(true)
    .with_several_keys_at_once(true);

/// A lease table whose waiters queue and are woken by the server, and whose
/// changes are watched (PostgreSQL's `LISTEN`).
pub(crate) const NOTIFIED_LEASES: Capabilities =
    QUEUED_LEASES.with_wake_up(WakeUp::Notify).with_watch(true);

/// Locks that last as long as their session: no per-lock lease to expire.
pub(crate) const SESSION_BOUND: Skips = &[
    (
        "expired_lease_is_reacquirable",
        "session-bound locks: no TTL expiry",
    ),
    (
        "release_never_deletes_a_newer_holders_lock",
        "session-bound locks: a holder cannot be overtaken by expiry",
    ),
];
