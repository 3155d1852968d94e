//! The conformance suite against the testkit's Consul stand-in (no Consul agent can
//! be installed here; the stand-in follows the documented HTTP semantics), over
//! plain HTTP and over HTTPS with client certificates, and against a real agent
//! when `CONSUL_HTTP_ADDR` is set.
//!
//! The stand-in is told to accept session TTLs below Consul's 10 s minimum, so
//! that the killed-holder case (a 1 s lease) sees the session invalidated within
//! its limits: sessions of 600 ms, no lock-delay.

use std::sync::Arc;
use std::time::Duration;

use lockkit_conformance::{Outcome, RunOptions, TestHarness, UrlHarness, url_backend};
use lockkit_consul::{ConsulDriver, ConsulOptions};
use lockkit_core::{LockDriver, LockError};
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

lockkit_conformance::suite!(
    consul_stand_in,
    UrlHarness<StandIn>,
    skip {
        expired_lease_is_reacquirable: "session-bound: a hold lasts as long as its session, there is no per-lock lease to expire",
        release_never_deletes_a_newer_holders_lock: "needs per-lock lease expiry; release_after_the_hold_vanished_never_touches_the_new_holder proves the same with the key deleted",
    },
    with {
        at_most_limit_permits_under_contention,
        permit_tokens_increase_across_permits,
        a_permit_limit_mismatch_is_a_config_error,
        a_release_wakes_one_waiter,
        a_cancelled_permit_acquire_leaves_nothing,
        a_killed_holders_permit_is_freed,
        inspection_shows_holder_mode_token_and_lease,
        a_free_key_inspects_empty,
        the_leader_is_shown_with_its_value_term_and_label,
        observe_sees_every_change_in_order,
        observe_wakes_on_the_backend_signal,
        held_locks_are_listed_by_prefix,
    }
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

lockkit_conformance::suite!(
    consul_stand_in_tls,
    UrlHarness<StandInTls>,
    skip {
        expired_lease_is_reacquirable: "session-bound: a hold lasts as long as its session, there is no per-lock lease to expire",
        release_never_deletes_a_newer_holders_lock: "needs per-lock lease expiry; release_after_the_hold_vanished_never_touches_the_new_holder proves the same with the key deleted",
    },
    with {
        at_most_limit_permits_under_contention,
        permit_tokens_increase_across_permits,
        a_permit_limit_mismatch_is_a_config_error,
        a_release_wakes_one_waiter,
        a_cancelled_permit_acquire_leaves_nothing,
        a_killed_holders_permit_is_freed,
        inspection_shows_holder_mode_token_and_lease,
        a_free_key_inspects_empty,
        the_leader_is_shown_with_its_value_term_and_label,
        observe_sees_every_change_in_order,
        observe_wakes_on_the_backend_signal,
        held_locks_are_listed_by_prefix,
    }
);

/// A real agent, from `CONSUL_HTTP_ADDR` (`host:port`, or an `http://` URL) and
/// `CONSUL_HTTP_TOKEN`: sessions of 10 s (Consul's minimum), no lock-delay.
struct Agent;

#[lockkit_core::async_trait]
impl lockkit_conformance::UrlBackend for Agent {
    type Server = ();
    async fn start() -> ((), String) {
        let addr = std::env::var("CONSUL_HTTP_ADDR").unwrap_or_default();
        let host = addr
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string();
        (
            (),
            format!(
                "consul://{host}?session_ttl_ms=10000&lock_delay_ms=0&prefix=lockkit-conformance"
            ),
        )
    }
    async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
        connect(url).await
    }
}

/// The whole suite against a real Consul agent, when `CONSUL_HTTP_ADDR` is set;
/// otherwise skipped, saying so. (Run this way, without a holder process, the
/// killed-holder case reports itself skipped; with 10 s sessions it could not meet
/// its 1 s lease anyway.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_against_a_real_agent_when_consul_http_addr_is_set() {
    if std::env::var("CONSUL_HTTP_ADDR").is_err() {
        eprintln!(
            "skipped: CONSUL_HTTP_ADDR is not set, so there is no real Consul agent to test against"
        );
        return;
    }
    let harness = <UrlHarness<Agent> as TestHarness>::start().await;
    let report = lockkit_conformance::run(Arc::new(harness), RunOptions::default()).await;
    let mut failed = Vec::new();
    for case in &report.cases {
        eprintln!("{:<50} {:?}", case.name, case.outcome);
        if matches!(case.outcome, Outcome::Failed(_)) {
            failed.push(case.name);
        }
    }
    assert!(
        failed.is_empty(),
        "failed against the real agent: {failed:?}"
    );
}
