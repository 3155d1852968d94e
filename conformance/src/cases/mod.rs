//! The cases, grouped by area. Each is a plain `async fn(&Ctx) -> CaseResult`.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use lockkit_core::{LockError, LockGuard, Locker};
use tokio::time::Instant;

use crate::check::{CaseError, CaseResult};
use crate::harness::Ctx;

mod exclusion;
mod expiry;
mod fairness;
mod fencing;
mod input;
mod process;
mod read_write;
mod watchdog;

/// A boxed case future.
pub(crate) type CaseFuture<'a> = Pin<Box<dyn Future<Output = CaseResult> + Send + 'a>>;

/// One named case.
#[derive(Debug)]
pub struct Case {
    /// The behaviour it proves.
    pub name: &'static str,
    /// Whether it tests behaviour only some drivers claim (skipped elsewhere).
    pub optional: bool,
    pub(crate) run: for<'a> fn(&'a Ctx) -> CaseFuture<'a>,
}

macro_rules! define_cases {
    ($d:tt; $($area:ident :: $case:ident),* $(,)?
     ; optional: $($oarea:ident :: $ocase:ident),* $(,)?) => {
        mod wrap {
            use super::*;
            $(
                pub(super) fn $case(ctx: &Ctx) -> CaseFuture<'_> {
                    Box::pin($area::$case(ctx))
                }
            )*
            $(
                pub(super) fn $ocase(ctx: &Ctx) -> CaseFuture<'_> {
                    Box::pin($oarea::$ocase(ctx))
                }
            )*
        }

        /// Every case, in the order they run. [`crate::run`] runs them all; the
        /// optional ones (behaviour only some drivers claim, such as `fair`) are
        /// reported as skipped where the capability is missing, and
        /// [`crate::suite!`] expands them only when listed under `with { … }`.
        pub static CASES: &[Case] = &[
            $( Case { name: stringify!($case), optional: false, run: wrap::$case }, )*
            $( Case { name: stringify!($ocase), optional: true, run: wrap::$ocase }, )*
        ];

        /// Expands every case for [`crate::suite!`].
        #[doc(hidden)]
        #[macro_export]
        macro_rules! __suite_cases {
            ($d h:ty, $d skips:tt) => {
                $( $d crate::__suite_case!($d h, $case, $d skips); )*
            };
        }

        /// One case: `#[ignore]`d with its reason if listed in the skips.
        #[doc(hidden)]
        #[macro_export]
        macro_rules! __suite_case {
            $(
                ($d h:ty, $case, [$case : $d why:literal $d($d rest:tt)*]) => {
                    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    #[ignore = $d why]
                    async fn $case() {
                        $d crate::run_test_case::<$d h>(stringify!($case), module_path!()).await;
                    }
                };
            )*
            ($d h:ty, $d case:ident, [$d s:ident : $d w:literal $d(, $d rs:ident : $d rw:literal)*]) => {
                $d crate::__suite_case!($d h, $d case, [$d($d rs : $d rw),*]);
            };
            ($d h:ty, $d case:ident, []) => {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $d case() {
                    $d crate::run_test_case::<$d h>(stringify!($d case), module_path!()).await;
                }
            };
        }
    };
}

define_cases! {$;
    exclusion::mutual_exclusion_under_contention,
    exclusion::independent_keys_do_not_block_each_other,
    exclusion::try_lock_fails_fast_when_held,
    exclusion::acquire_times_out,
    exclusion::cancelled_acquire_leaves_nothing_behind,
    expiry::expired_lease_is_reacquirable,
    expiry::release_never_deletes_a_newer_holders_lock,
    expiry::release_after_the_hold_vanished_never_touches_the_new_holder,
    expiry::extend_keeps_the_lock_and_fails_after_loss,
    fencing::fencing_tokens_increase_across_holders,
    fencing::reentrant_acquire_returns_same_token,
    watchdog::watchdog_keeps_lock_past_ttl,
    watchdog::lost_signal_fires_when_hold_disappears,
    process::abandoned_by_killed_process_is_freed_after_ttl,
    input::invalid_keys_are_rejected,
    input::invalid_ttls_are_rejected,
    ; optional:
    fairness::fifo_order,
    read_write::readers_share,
    read_write::writer_excludes_readers_and_writers,
    read_write::read_write_order_is_fifo,
    read_write::read_hold_is_not_upgraded,
}

/// Checks that `r` is the "held by someone else" error of a no-wait acquire.
pub(crate) fn expect_contended(r: Result<LockGuard, LockError>, what: &str) -> CaseResult {
    match r {
        Err(LockError::Contended { .. }) => Ok(()),
        Err(e) => Err(CaseError::Failed(format!(
            "{what}: expected Contended, got error: {e}"
        ))),
        Ok(g) => Err(CaseError::Failed(format!(
            "{what}: expected Contended, but the lock was granted (token {})",
            g.token()
        ))),
    }
}

/// The slowest of three uncontended try_lock + release round trips: the yardstick
/// for timing tolerances on this backend, measured in the same run.
pub(crate) async fn reference_op(ctx: &Ctx, locker: &Locker) -> Result<Duration, CaseError> {
    let key = ctx.key("reference");
    let mut worst = Duration::ZERO;
    for _ in 0..3 {
        let t = Instant::now();
        let g = locker.try_lock(key.as_str()).await?;
        g.release().await?;
        worst = worst.max(t.elapsed());
    }
    Ok(worst)
}

/// A tolerance for "soon after": `base` plus ten reference round trips.
pub(crate) fn tolerance(base: Duration, reference: Duration) -> Duration {
    base + reference * 10
}
