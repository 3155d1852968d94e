//! The conformance suite against a real PostgreSQL server from the testkit (one
//! throwaway server per test), in lease mode and in advisory mode; both again
//! over TLS, against a server that accepts TLS connections only; both on a
//! server whose transactions are SERIALIZABLE by default; the lease mode through
//! PgBouncer in transaction pooling mode, with PgBouncer's defaults; and the
//! advisory mode through PgBouncer in session pooling mode.

use std::sync::Arc;

mod suites;

use lockkit_conformance::{UrlHarness, url_backend};
use lockkit_core::{Capabilities, Inspect, LockDriver, LockError, WakeUp};
use lockkit_sql::postgres::PgOptions;
use lockkit_testkit::{PgBouncer, PoolMode, Postgres};
use suites::{NOTIFIED_LEASES, QUEUED_LEASES, SESSION_BOUND};

async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
    lockkit_sql::postgres::connect(PgOptions::from_url(url)?).await
}

url_backend!(
    /// Lease mode (the default).
    Lease: Postgres = Postgres::start(), |s| s.url(), connect
);

url_backend!(
    /// `?mode=advisory`: session-bound advisory locks.
    Advisory: Postgres = Postgres::start(), |s| format!("{}?mode=advisory", s.url()), connect
);

url_backend!(
    /// Lease mode over TLS, verifying the server against the testkit's CA.
    TlsLease: Postgres = Postgres::start_tls(), |s| s.url(), connect
);

url_backend!(
    /// `mode=advisory` over TLS: the held locks' own connections too.
    TlsAdvisory: Postgres = Postgres::start_tls(), |s| format!("{}&mode=advisory", s.url()), connect
);

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

/// Advisory locks: read-write locks, semaphores, inspection of holders, woken
/// and watched through `LISTEN`; session-bound.
const ADVISORY: Capabilities = Capabilities::baseline()
    .with_shared(true)
    .with_permits(true)
    .with_inspect(Inspect::Holders)
    .with_lease_expiry(false)
    .with_wake_up(WakeUp::Notify)
    .with_watch(true)
    .with_transaction_locks(true);

lockkit_conformance::main! {
    postgres: UrlHarness<Lease>, claims NOTIFIED_LEASES;
    postgres_advisory: UrlHarness<Advisory>, claims ADVISORY, skip SESSION_BOUND;
    postgres_tls: UrlHarness<TlsLease>, claims NOTIFIED_LEASES;
    postgres_tls_advisory: UrlHarness<TlsAdvisory>, claims ADVISORY, skip SESSION_BOUND;
    postgres_serializable: UrlHarness<SerializableLease>, claims NOTIFIED_LEASES;
    postgres_serializable_advisory: UrlHarness<SerializableAdvisory>, claims ADVISORY,
        skip SESSION_BOUND;
    // Behind a transaction-mode pooler nothing is notified: waiters poll.
    postgres_pgbouncer: UrlHarness<PgBouncerLease>, claims QUEUED_LEASES;
    postgres_pgbouncer_session_advisory: UrlHarness<PgBouncerSessionAdvisory>, claims ADVISORY,
        skip SESSION_BOUND;
}
