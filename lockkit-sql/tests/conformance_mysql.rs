//! The conformance suite against a real MariaDB server from the testkit (one
//! throwaway server per test), in lease mode and in GET_LOCK mode; and both
//! again over TLS, against a server that accepts TLS connections only.

use std::sync::Arc;

use lockkit_conformance::{UrlHarness, url_backend};
use lockkit_core::{LockDriver, LockError};
use lockkit_sql::mysql::MySqlOptions;
use lockkit_testkit::MariaDb;

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

lockkit_conformance::suite!(mysql, UrlHarness<Lease>);

lockkit_conformance::suite!(
    mysql_get_lock,
    UrlHarness<GetLock>,
    skip {
        expired_lease_is_reacquirable: "GET_LOCK locks are session-bound: no TTL expiry",
        release_never_deletes_a_newer_holders_lock: "GET_LOCK locks are session-bound: a holder cannot be overtaken by expiry",
    }
);

url_backend!(
    /// Lease mode over TLS, verifying the server against the testkit's CA.
    TlsLease: MariaDb = MariaDb::start_tls(), |s| s.url(), connect
);

url_backend!(
    /// `mode=get_lock` over TLS: the held locks' own connections too.
    TlsGetLock: MariaDb = MariaDb::start_tls(), |s| format!("{}&mode=get_lock", s.url()), connect
);

lockkit_conformance::suite!(mysql_tls, UrlHarness<TlsLease>);

lockkit_conformance::suite!(
    mysql_tls_get_lock,
    UrlHarness<TlsGetLock>,
    skip {
        expired_lease_is_reacquirable: "GET_LOCK locks are session-bound: no TTL expiry",
        release_never_deletes_a_newer_holders_lock: "GET_LOCK locks are session-bound: a holder cannot be overtaken by expiry",
    }
);
