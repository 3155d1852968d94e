//! The conformance suite against a real MariaDB server from the testkit (one
//! throwaway server per test), in lease mode and in GET_LOCK mode; both again
//! over TLS, against a server that accepts TLS connections only; and both on a
//! server with the settings of [`MARIADB_HOSTILE_SETTINGS`] (latin1, a sql_mode
//! that changes how statements read, SERIALIZABLE, statement-based binary
//! logging).

use std::sync::Arc;

mod suites;

use lockkit_conformance::{UrlHarness, url_backend};
use lockkit_core::{Capabilities, Inspect, LockDriver, LockError};
use lockkit_sql::mysql::MySqlOptions;
use lockkit_testkit::{MARIADB_HOSTILE_SETTINGS, MariaDb};
use suites::{QUEUED_LEASES, SESSION_BOUND};

async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
    lockkit_sql::mysql::connect(MySqlOptions::from_url(url)?).await
}

url_backend!(
    /// Lease mode (the default).
    Lease: MariaDb = MariaDb::start(), |s| s.url(), connect
);

url_backend!(
    /// `?mode=get_lock`: session-bound `GET_LOCK` locks.
    GetLock: MariaDb = MariaDb::start(), |s| format!("{}?mode=get_lock", s.url()), connect
);

url_backend!(
    /// Lease mode over TLS, verifying the server against the testkit's CA.
    TlsLease: MariaDb = MariaDb::start_tls(), |s| s.url(), connect
);

url_backend!(
    /// `mode=get_lock` over TLS: the held locks' own connections too.
    TlsGetLock: MariaDb = MariaDb::start_tls(), |s| format!("{}&mode=get_lock", s.url()), connect
);

url_backend!(
    /// Lease mode on a server with hostile settings.
    HostileLease: MariaDb = MariaDb::start_with_settings(MARIADB_HOSTILE_SETTINGS), |s| s.url(), connect
);

url_backend!(
    /// `mode=get_lock` on a server with hostile settings.
    HostileGetLock: MariaDb = MariaDb::start_with_settings(MARIADB_HOSTILE_SETTINGS),
        |s| format!("{}?mode=get_lock", s.url()), connect
);

/// `GET_LOCK`: semaphores and inspection of holders; session-bound, polled.
const GET_LOCK: Capabilities = Capabilities::baseline()
    .with_permits(true)
    .with_inspect(Inspect::Holders)
    .with_lease_expiry(false)
    .with_transaction_locks(true);

lockkit_conformance::main! {
    mysql: UrlHarness<Lease>, claims QUEUED_LEASES;
    mysql_get_lock: UrlHarness<GetLock>, claims GET_LOCK, skip SESSION_BOUND;
    mysql_tls: UrlHarness<TlsLease>, claims QUEUED_LEASES;
    mysql_tls_get_lock: UrlHarness<TlsGetLock>, claims GET_LOCK, skip SESSION_BOUND;
    mysql_hostile: UrlHarness<HostileLease>, claims QUEUED_LEASES;
    mysql_hostile_get_lock: UrlHarness<HostileGetLock>, claims GET_LOCK, skip SESSION_BOUND;
}
