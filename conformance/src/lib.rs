//! The shared behavioural suite every lockkit driver must pass.
//!
//! A driver supplies a [`Harness`]: fresh drivers "as if from another process", a way
//! to make a hold vanish behind its holder's back, and (optionally) a URL a child
//! process can connect with. Then:
//!
//! - its conformance test file is its harness and one [`main!`] call, a line per
//!   suite:
//!
//!   ```ignore
//!   lockkit_conformance::main! {
//!       sqlite: UrlHarness<File>, claims SQLITE;
//!   }
//!   ```
//!
//!   The required cases run on every driver. Optional cases test behaviour only
//!   some drivers promise, each by the capabilities it needs ([`Case::needs`]):
//!   `fifo_order` for drivers that claim `fair`; the read-write cases for
//!   `shared`; the semaphore cases for `permits`; the inspection cases for
//!   `inspect`. A suite runs those its claimed capabilities call for, and a
//!   generated test fails unless the claims are the driver's own. A case the
//!   driver cannot pass is listed under `skip`: reported as ignored, never as
//!   passed.
//! - programmatically, [`run`] executes the same cases and returns a [`Report`]
//!   (this is what `lockkit check URL` does).

mod cases;
mod check;
mod exclude_each_other;
mod harness;
pub mod history;
pub mod holder;
mod observe;
mod queue_drain;
mod report;
mod runner;
mod suites;
mod until;
mod waiters_queued;

pub use cases::{CASES, Case, Needs};
pub use check::{CaseError, CaseResult};
pub use exclude_each_other::exclude_each_other;
pub use harness::{Ctx, Harness, TestHarness, UrlBackend, UrlHarness};
pub use queue_drain::QueuedSemaphore;
pub use report::{CaseReport, Outcome, Report};
pub use runner::{
    CASE_TIMEOUT, HolderCommand, Progress, ProgressFn, RunOptions, matches_filter, run,
};
pub use suites::{Skips, Suites};
pub use until::{until, until_ok};
pub use waiters_queued::until_waiters;

/// Declares a [`UrlBackend`] in one statement: a unit struct `$name` whose server
/// of type `$server` is started by the future `$start` (resolving to a `Result`; an
/// error fails the test with its message), whose URL is `|$s| $url` (the URL every
/// driver, and the killed-holder child process, connects with), and whose drivers
/// come from `$connect`, an `async fn(&str) -> Result<Arc<dyn LockDriver>, LockError>`.
///
/// ```ignore
/// async fn connect(url: &str) -> Result<Arc<dyn LockDriver>, LockError> {
///     lockkit_sql::postgres::connect(PgOptions::from_url(url)?).await
/// }
///
/// lockkit_conformance::url_backend!(
///     /// Lease mode, on a throwaway server.
///     Lease: Postgres = Postgres::start(), |s| s.url(), connect
/// );
/// lockkit_conformance::main! {
///     postgres: UrlHarness<Lease>, claims CLAIMS;
/// }
/// ```
#[macro_export]
macro_rules! url_backend {
    ($(#[$doc:meta])* $name:ident: $server:ty = $start:expr, |$s:ident| $url:expr, $connect:path $(,)?) => {
        $(#[$doc])*
        struct $name;

        #[$crate::__private::async_trait]
        impl $crate::UrlBackend for $name {
            type Server = $server;
            async fn start() -> ($server, String) {
                let $s = match $start.await {
                    Ok(server) => server,
                    Err(e) => panic!("cannot start the test backend: {e}"),
                };
                let url = $url;
                ($s, url)
            }
            async fn connect(
                url: &str,
            ) -> Result<
                std::sync::Arc<dyn $crate::__private::LockDriver>,
                $crate::__private::LockError,
            > {
                $connect(url).await
            }
        }
    };
}

/// What the macros name from this crate's dependencies.
#[doc(hidden)]
pub mod __private {
    pub use async_trait::async_trait;
    pub use lockkit_core::{LockDriver, LockError};
}

/// The `main` of a driver's conformance test binary: one macro call, one line per
/// suite. Each suite names its [`TestHarness`], the [`Capabilities`] its driver
/// claims, and optionally the cases it cannot pass ([`Skips`]):
///
/// ```ignore
/// const CLAIMS: Capabilities = Capabilities::baseline().with_shared(true);
/// const SESSION_BOUND: Skips = &[("expired_lease_is_reacquirable", "no per-lock lease")];
///
/// lockkit_conformance::main! {
///     sqlite: UrlHarness<File>, claims CLAIMS;
///     sqlite_wal: UrlHarness<Wal>, claims CLAIMS, skip SESSION_BOUND;
/// }
/// ```
///
/// Each suite lists, as `SUITE::CASE`, every case whose needs the claims meet;
/// the others are not listed at all. `SUITE::capabilities_are_as_claimed` fails
/// unless the connected driver's capabilities are exactly the claims, so a suite
/// cannot claim less than its driver and skip the cases that would prove the rest.
/// A skipped case is listed as ignored; one that finds a capability missing
/// without being skipped fails, saying so.
///
/// The test target must not use libtest's harness:
///
/// ```toml
/// [[test]]
/// name = "conformance_sqlite"
/// harness = false
/// ```
///
/// [`Capabilities`]: lockkit_core::Capabilities
#[macro_export]
macro_rules! main {
    ($($(#[$doc:meta])* $name:ident: $harness:ty, claims $claims:expr $(, skip $skip:expr)?;)+) => {
        fn main() -> std::process::ExitCode {
            let mut suites = $crate::Suites::new();
            $(
                $(#[$doc])*
                suites.suite::<$harness>(
                    stringify!($name),
                    $claims,
                    None::<$crate::Skips>$(.or(Some($skip)))?.unwrap_or(&[]),
                );
            )+
            suites.run()
        }
    };
}
