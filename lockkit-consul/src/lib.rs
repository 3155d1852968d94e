//! The Consul driver for lockkit. Not for direct use; see the `lockkit` crate.
//!
//! URL: `consul://[token@]host:port[?token=…&session_ttl_ms=N&lock_delay_ms=N&prefix=NAME&dc=NAME]`,
//! or `consuls://…[&tls_ca=PATH][&tls_cert=PATH&tls_key=PATH]` for HTTPS; the ACL
//! token may also come from `CONSUL_HTTP_TOKEN` (see [`ConsulOptions::from_url`]).
//! Plain HTTP through reqwest; no Consul client library.
//!
//! # The recipe
//!
//! - **One session per driver** (`PUT /v1/session/create`): TTL `session_ttl_ms`
//!   (default 15 s), behavior `delete`, lock-delay `lock_delay_ms` (default 15 s).
//!   Each watchdog round renews it once, and a keep-alive task renews it whenever
//!   TTL/3 has passed without a renewal (locks with long TTLs, or none held):
//!   **one renewal per session, whatever the number of locks**.
//! - **Lock `K`** is the KV key `<prefix>/<K as one segment>`. Acquire is one
//!   transaction (`PUT /v1/txn`, verb `lock`) with our session, value = the owner
//!   id; it returns the entry, so the grant and its token take one round trip.
//! - **The fencing token** is the key's `ModifyIndex` after the acquiring write:
//!   Consul's raft index, strictly increasing across every write in the cluster, so
//!   across holders (even when the key was deleted in between). Consul's own
//!   `LockIndex` counts acquisitions of the key, but restarts when the key is
//!   deleted (every release here deletes it), so it is not used as the token.
//! - **Waiting** is a blocking query on the key (`?index=&wait=`): it returns when
//!   the key changes (a release deletes it). Every waiter of a key is woken by a
//!   release and retries (Consul KV has no per-waiter queue): waiters are not
//!   served in order (`fair` is false). A lock-delay changes nothing on the key,
//!   so a waiter refused by one polls (50 ms doubling to 1 s).
//! - **Release** deletes the key with `cas` = our acquiring index: it never deletes
//!   another holder's key, and it wakes the waiters.
//! - **Renewal** of holds (the watchdog): one session renew, then one transaction of
//!   `check-session` operations per 64 holds, so a key deleted behind our back
//!   (`force_release`) is reported `Lost` at the next round.
//!
//! # The lost signal
//!
//! When Consul answers that the session no longer exists, or no renewal has
//! succeeded for a whole TTL (from then on Consul may invalidate it), every guard
//! of the session is signalled lost at once, and the next acquire creates a new
//! session. Owners sharing a driver share its session, so they lose their locks
//! together.
//!
//! # Guarantees and limits
//!
//! - Consul invalidates a session between TTL and 2×TTL after its last renewal;
//!   its keys are then deleted (behavior `delete`), and nobody can acquire them for
//!   the lock-delay: a holder that was cut off has that long to notice (its
//!   `lost()` fires after one TTL without a renewal) before another can take its
//!   lock. A holder paused past TTL + lock-delay loses it; fencing is the defence.
//! - Consul's KV is replicated by raft: a grant acknowledged by the leader survives
//!   the loss of a minority of servers. Reads here are the agent's default
//!   consistency mode.
//! - **Tested against a stand-in, not a real agent**: no Consul agent can be
//!   installed on the machines this was built on. The testkit's
//!   `ConsulStandIn` follows the documented HTTP semantics; the same conformance
//!   file runs against a real agent when `CONSUL_HTTP_ADDR` is set.

mod acquire;
mod api;
mod driver;
mod error;
mod holds;
mod options;
mod renew;
mod session;
mod tls;

pub use driver::ConsulDriver;
pub use options::{ConsulOptions, DEFAULT_LOCK_DELAY, DEFAULT_SESSION_TTL};

use std::sync::Arc;

use lockkit_core::driver::registry::CONSUL;
use lockkit_core::driver::{Driver, DriverEntry, LockDriver};

/// How the `lockkit` facade finds this driver.
pub const DRIVER: DriverEntry = DriverEntry::of::<ConsulDriver>();

impl Driver for ConsulDriver {
    const NAME: &'static str = CONSUL.name;
    const URL_SCHEMES: &'static [&'static str] = CONSUL.schemes;
    const FEATURE: &'static str = CONSUL.feature;
    type Options = ConsulOptions;

    fn options(url: &str) -> lockkit_core::Result<ConsulOptions> {
        ConsulOptions::from_url(url)
    }

    async fn connect(options: ConsulOptions) -> lockkit_core::Result<Arc<dyn LockDriver>> {
        Ok(Arc::new(ConsulDriver::connect(options).await?))
    }
}
