//! The conformance suite against a real MariaDB server from the testkit (one
//! throwaway server per test), in lease mode and in GET_LOCK mode; both again
//! over TLS, against a server that accepts TLS connections only; and both on a
//! server with the settings of [`MARIADB_HOSTILE_SETTINGS`] (latin1, a sql_mode
//! that changes how statements read, SERIALIZABLE, statement-based binary
//! logging).

use std::sync::Arc;

#[macro_use]
mod suites;

use lockkit_conformance::{UrlHarness, url_backend};
use lockkit_core::{LockDriver, LockError};
use lockkit_sql::mysql::MySqlOptions;
use lockkit_testkit::{MARIADB_HOSTILE_SETTINGS, MariaDb};

async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
    lockkit_sql::mysql::connect(MySqlOptions::from_url(url)?).await
}

/// The suite for a session-bound harness: no lease expiry; semaphores
/// and inspection.
macro_rules! session_suite {
    ($name:ident, $harness:ty) => {
        lockkit_conformance::suite!(
            $name,
            $harness,
            skip {
                expired_lease_is_reacquirable: "GET_LOCK locks are session-bound: no TTL expiry",
                release_never_deletes_a_newer_holders_lock: "GET_LOCK locks are session-bound: a holder cannot be overtaken by expiry",
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
            }
        );
    };
}

url_backend!(
    /// Lease mode (the default).
    Lease: MariaDb = MariaDb::start(), |s| s.url(), connect
);

url_backend!(
    /// `?mode=get_lock`: session-bound `GET_LOCK` locks.
    GetLock: MariaDb = MariaDb::start(), |s| format!("{}?mode=get_lock", s.url()), connect
);

lease_suite!(mysql, UrlHarness<Lease>);

session_suite!(mysql_get_lock, UrlHarness<GetLock>);

url_backend!(
    /// Lease mode over TLS, verifying the server against the testkit's CA.
    TlsLease: MariaDb = MariaDb::start_tls(), |s| s.url(), connect
);

url_backend!(
    /// `mode=get_lock` over TLS: the held locks' own connections too.
    TlsGetLock: MariaDb = MariaDb::start_tls(), |s| format!("{}&mode=get_lock", s.url()), connect
);

lease_suite!(mysql_tls, UrlHarness<TlsLease>);

session_suite!(mysql_tls_get_lock, UrlHarness<TlsGetLock>);

url_backend!(
    /// Lease mode on a server with hostile settings.
    HostileLease: MariaDb = MariaDb::start_with_settings(MARIADB_HOSTILE_SETTINGS), |s| s.url(), connect
);

url_backend!(
    /// `mode=get_lock` on a server with hostile settings.
    HostileGetLock: MariaDb = MariaDb::start_with_settings(MARIADB_HOSTILE_SETTINGS),
        |s| format!("{}?mode=get_lock", s.url()), connect
);

lease_suite!(mysql_hostile, UrlHarness<HostileLease>);

session_suite!(mysql_hostile_get_lock, UrlHarness<HostileGetLock>);
