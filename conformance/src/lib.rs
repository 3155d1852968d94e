//! The shared behavioural suite every lockkit driver must pass.
//!
//! A driver supplies a [`Harness`]: fresh drivers "as if from another process", a way
//! to make a hold vanish behind its holder's back, and (optionally) a URL a child
//! process can connect with. Then:
//!
//! - in its tests, one line expands to one `#[tokio::test]` per case:
//!
//!   ```ignore
//!   lockkit_conformance::suite!(sqlite, SqliteHarness);
//!   lockkit_conformance::suite!(mem, MemHarness, skip {
//!       abandoned_by_killed_process_is_freed_after_ttl: "mem is process-local",
//!   });
//!   ```
//!
//!   A case that needs a capability the driver lacks must be listed under `skip`; it
//!   is then reported as ignored (never as passed), and a case that finds a capability
//!   missing without being listed fails and says so.
//!
//!   Optional cases test behaviour only some drivers promise, each by the
//!   capabilities it needs ([`Case::needs`]): `fifo_order` for drivers that claim
//!   `fair`; the read-write cases for `shared`; the semaphore cases for `permits`;
//!   the inspection cases for `inspect`. They are expanded only when the driver opts
//!   in, so other drivers' suites neither pass nor ignore them — and the opt-in list
//!   must match the driver's capabilities exactly (a generated test checks):
//!
//!   ```ignore
//!   lockkit_conformance::suite!(etcd, EtcdHarness, with { fifo_order });
//!   ```
//!
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
mod until;
mod waiters_queued;

pub use cases::{CASES, Case, Needs};
pub use check::{CaseError, CaseResult};
pub use exclude_each_other::exclude_each_other;
pub use harness::{Ctx, Harness, TestHarness, UrlBackend, UrlHarness};
pub use queue_drain::QueuedSemaphore;
pub use report::{CaseReport, Outcome, Report};
pub use runner::{
    CASE_TIMEOUT, HolderCommand, Progress, ProgressFn, RunOptions, check_optional_cases,
    matches_filter, run, run_test_case,
};
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
/// lockkit_conformance::suite!(postgres, UrlHarness<Lease>);
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

/// Expands to one `#[tokio::test]` per conformance case, in a module named `$name`.
///
/// `$harness` is a type implementing [`TestHarness`]. The optional `skip { case:
/// "reason", … }` list marks cases the driver cannot support as `#[ignore]` with the
/// reason. The optional `with { case, … }` list adds optional cases (behaviour only
/// some drivers claim, such as `fifo_order` for `fair` drivers); they run, and must
/// pass, like any other, and they must be exactly the ones the driver's capabilities
/// call for (a generated test checks).
#[macro_export]
macro_rules! suite {
    ($name:ident, $harness:ty
        $(, skip { $($skip:ident : $why:literal),* $(,)? })?
        $(, with { $($with:ident),* $(,)? })?
        $(,)?) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            $crate::__suite_cases!($harness, [$($($skip : $why),*)?]);

            $($(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $with() {
                    $crate::run_test_case::<$harness>(stringify!($with), module_path!()).await;
                }
            )*)?

            /// The optional cases listed are exactly those the driver's
            /// capabilities call for.
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn optional_cases_match_capabilities() {
                $crate::check_optional_cases::<$harness>(&[$($(stringify!($with)),*)?]).await;
            }

            /// Entry point for the child process of the killed-holder case; does
            /// nothing unless started by that case.
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[ignore = "child-process entry point for abandoned_by_killed_process_is_freed_after_ttl"]
            async fn holder_process_entry() {
                $crate::holder::child_main(|url: String| async move {
                    <$harness as $crate::TestHarness>::connect(&url).await
                })
                .await;
            }
        }
    };
}
