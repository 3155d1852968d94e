//! The conformance suite against a real Consul agent, when `CONSUL_HTTP_ADDR` is
//! set (no agent can be installed here, so CI runs the stand-in's suites in
//! `conformance_consul.rs` instead).

use std::sync::Arc;

use lockkit_conformance::{Outcome, RunOptions, TestHarness, UrlHarness};
use lockkit_consul::{ConsulDriver, ConsulOptions};
use lockkit_core::{LockDriver, LockError};

async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
    Ok(Arc::new(
        ConsulDriver::connect(ConsulOptions::from_url(url)?).await?,
    ))
}

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
