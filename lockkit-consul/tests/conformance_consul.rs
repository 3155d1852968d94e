//! The conformance suite against the testkit's Consul stand-in (no Consul agent can
//! be installed here; the stand-in follows the documented HTTP semantics), over
//! plain HTTP and over HTTPS with client certificates. (`real_agent.rs` runs the
//! same cases against a real agent when `CONSUL_HTTP_ADDR` is set.)
//!
//! The stand-in is told to accept session TTLs below Consul's 10 s minimum, so
//! that the killed-holder case (a 1 s lease) sees the session invalidated within
//! its limits: sessions of 600 ms, no lock-delay.

use std::sync::Arc;
use std::time::Duration;

use lockkit_conformance::{Skips, UrlHarness, url_backend};
use lockkit_consul::{ConsulDriver, ConsulOptions};
use lockkit_core::{Capabilities, Inspect, LockDriver, LockError, WakeUp};
use lockkit_testkit::{ConsulStandIn, StandInOptions};

async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
    Ok(Arc::new(
        ConsulDriver::connect(ConsulOptions::from_url(url)?).await?,
    ))
}

async fn stand_in() -> Result<ConsulStandIn, lockkit_testkit::TestkitError> {
    ConsulStandIn::start_with(
        StandInOptions::default().with_min_session_ttl(Duration::from_millis(100)),
    )
    .await
}

url_backend!(
    /// The stand-in, sessions of 600 ms, no lock-delay.
    StandIn: ConsulStandIn = stand_in(),
    |s| format!("{}?session_ttl_ms=600&lock_delay_ms=0", s.url()),
    connect
);

async fn stand_in_tls() -> Result<ConsulStandIn, lockkit_testkit::TestkitError> {
    ConsulStandIn::start_with(
        StandInOptions::default()
            .with_min_session_ttl(Duration::from_millis(100))
            .with_tls(true),
    )
    .await
}

url_backend!(
    /// The stand-in over HTTPS, requiring a client certificate (`consuls://`).
    StandInTls: ConsulStandIn = stand_in_tls(),
    |s| format!("{}&session_ttl_ms=600&lock_delay_ms=0", s.url()),
    connect
);

/// Semaphores, inspection of holders, listing and watches; session-bound.
const CONSUL: Capabilities = Capabilities::baseline()
    .with_lease_expiry(false)
    .with_wake_up(WakeUp::Notify)
    .with_permits(true)
    .with_inspect(Inspect::Holders)
    .with_list(true)
    .with_watch(true);

const SESSION_BOUND: Skips = &[
    (
        "expired_lease_is_reacquirable",
        "session-bound: a hold lasts as long as its session, there is no per-lock lease to expire",
    ),
    (
        "release_never_deletes_a_newer_holders_lock",
        "needs per-lock lease expiry; release_after_the_hold_vanished_never_touches_the_new_holder proves the same with the key deleted",
    ),
];

lockkit_conformance::main! {
    consul_stand_in: UrlHarness<StandIn>, claims CONSUL, skip SESSION_BOUND;
    consul_stand_in_tls: UrlHarness<StandInTls>, claims CONSUL, skip SESSION_BOUND;
}
