//! The conformance suite against a real PostgreSQL server from the testkit (one
//! throwaway server per test), in lease mode and in advisory mode; both again
//! over TLS, against a server that accepts TLS connections only; both on a
//! server whose transactions are SERIALIZABLE by default; the lease mode through
//! PgBouncer in transaction pooling mode, with PgBouncer's defaults; and the
//! advisory mode through PgBouncer in session pooling mode.

use std::sync::Arc;

#[macro_use]
mod suites;

use lockkit_conformance::{UrlHarness, url_backend};
use lockkit_core::{LockDriver, LockError};
use lockkit_sql::postgres::PgOptions;
use lockkit_testkit::{PgBouncer, PoolMode, Postgres};

async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
    lockkit_sql::postgres::connect(PgOptions::from_url(url)?).await
}

/// The suite for a session-bound harness: no lease expiry; read-write, semaphores
/// and inspection.
macro_rules! session_suite {
    ($name:ident, $harness:ty) => {
        lockkit_conformance::suite!(
            $name,
            $harness,
            skip {
                expired_lease_is_reacquirable: "advisory locks are session-bound: no TTL expiry",
                release_never_deletes_a_newer_holders_lock: "advisory locks are session-bound: a holder cannot be overtaken by expiry",
            },
            with {
                readers_share,
                writer_excludes_readers_and_writers,
                read_hold_is_not_upgraded,
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
            }
        );
    };
}

url_backend!(
    /// Lease mode (the default).
    Lease: Postgres = Postgres::start(), |s| s.url(), connect
);

url_backend!(
    /// `?mode=advisory`: session-bound advisory locks.
    Advisory: Postgres = Postgres::start(), |s| format!("{}?mode=advisory", s.url()), connect
);

lease_suite!(
    postgres,
    UrlHarness<Lease>,
    observe_wakes_on_the_backend_signal
);

session_suite!(postgres_advisory, UrlHarness<Advisory>);

url_backend!(
    /// Lease mode over TLS, verifying the server against the testkit's CA.
    TlsLease: Postgres = Postgres::start_tls(), |s| s.url(), connect
);

url_backend!(
    /// `mode=advisory` over TLS: the held locks' own connections too.
    TlsAdvisory: Postgres = Postgres::start_tls(), |s| format!("{}&mode=advisory", s.url()), connect
);

lease_suite!(
    postgres_tls,
    UrlHarness<TlsLease>,
    observe_wakes_on_the_backend_signal
);

session_suite!(postgres_tls_advisory, UrlHarness<TlsAdvisory>);

/// The server setting the SERIALIZABLE suites run under.
const SERIALIZABLE: &[&str] = &["default_transaction_isolation=serializable"];

url_backend!(
    /// Lease mode, every transaction SERIALIZABLE unless it says otherwise.
    SerializableLease: Postgres = Postgres::start_with_settings(SERIALIZABLE), |s| s.url(), connect
);

url_backend!(
    /// Advisory mode, every transaction SERIALIZABLE unless it says otherwise.
    SerializableAdvisory: Postgres = Postgres::start_with_settings(SERIALIZABLE),
        |s| format!("{}?mode=advisory", s.url()), connect
);

lease_suite!(
    postgres_serializable,
    UrlHarness<SerializableLease>,
    observe_wakes_on_the_backend_signal
);

session_suite!(
    postgres_serializable_advisory,
    UrlHarness<SerializableAdvisory>
);

url_backend!(
    /// Lease mode through PgBouncer in transaction pooling mode (detected at
    /// connect): plain-text statements, polling waiters.
    PgBouncerLease: PgBouncer = PgBouncer::start(PoolMode::Transaction), |s| s.url(), connect
);

url_backend!(
    /// Advisory mode through PgBouncer in session pooling mode: a client
    /// connection keeps its server connection, so sessions are sessions (said
    /// with `pooler=none`: PgBouncer's own port tells connecting that
    /// something stands between).
    PgBouncerSessionAdvisory: PgBouncer = PgBouncer::start(PoolMode::Session),
        |s| format!("{}?mode=advisory&pooler=none", s.url()), connect
);

// No `observe_wakes_on_the_backend_signal`: behind a transaction-mode pooler
// nothing is notified, and the driver says so (`watch` false).
lease_suite!(postgres_pgbouncer, UrlHarness<PgBouncerLease>);

session_suite!(
    postgres_pgbouncer_session_advisory,
    UrlHarness<PgBouncerSessionAdvisory>
);
