//! The cases, grouped by area. Each is a plain `async fn(&Ctx) -> CaseResult`.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use lockkit_core::{Capabilities, Inspect, LockError, LockGuard, Locker};
use tokio::time::Instant;

use crate::check::{CaseError, CaseResult};
use crate::harness::Ctx;

mod at_once;
mod counted;
mod election;
mod exclusion;
mod expiry;
mod fairness;
mod fencing;
mod input;
mod inspect;
mod job;
mod multi;
mod process;
mod read_write;
mod semaphore;
mod waiters;
mod watchdog;

/// A boxed case future.
pub(crate) type CaseFuture<'a> = Pin<Box<dyn Future<Output = CaseResult> + Send + 'a>>;

/// The capabilities an optional case needs: their name, and whether a driver's
/// [`Capabilities`] have them.
pub type Needs = (&'static str, fn(&Capabilities) -> bool);

/// One named case.
#[derive(Debug)]
pub struct Case {
    /// The behaviour it proves.
    pub name: &'static str,
    /// For a case about behaviour only some drivers claim: the capabilities it
    /// needs.
    pub needs: Option<Needs>,
    pub(crate) run: for<'a> fn(&'a Ctx) -> CaseFuture<'a>,
}

impl Case {
    /// Whether it tests behaviour only some drivers claim (skipped elsewhere).
    pub fn is_optional(&self) -> bool {
        self.needs.is_some()
    }

    /// Whether a driver with `caps` must pass it.
    pub fn applies_to(&self, caps: &Capabilities) -> bool {
        self.needs.is_none_or(|(_, has)| has(caps))
    }
}

/// What the optional cases need, each a predicate over [`Capabilities`].
mod needs {
    use super::{Capabilities, Inspect, serves_in_order};

    /// Waiters served in order, always or when asked, and counted (the cases
    /// wait for them to queue).
    pub(super) fn fair(c: &Capabilities) -> bool {
        serves_in_order(c) && c.inspect == Inspect::HoldersAndWaiters
    }
    /// Neither fair nor fair on request: a fair request is refused.
    pub(super) fn unfair(c: &Capabilities) -> bool {
        !serves_in_order(c)
    }
    /// Fair requests, where waiting is not fair by default.
    pub(super) fn fair_on_request(c: &Capabilities) -> bool {
        c.fair_on_request && c.inspect == Inspect::HoldersAndWaiters
    }
    pub(super) fn several_keys_at_once(c: &Capabilities) -> bool {
        c.several_keys_at_once
    }
    pub(super) fn shared(c: &Capabilities) -> bool {
        c.shared
    }
    pub(super) fn shared_and_fair(c: &Capabilities) -> bool {
        c.shared && fair(c)
    }
    pub(super) fn permits(c: &Capabilities) -> bool {
        c.permits
    }
    pub(super) fn permits_that_expire(c: &Capabilities) -> bool {
        c.permits && c.lease_expiry
    }
    pub(super) fn permits_across_processes(c: &Capabilities) -> bool {
        c.permits && c.cross_process
    }
    pub(super) fn inspect(c: &Capabilities) -> bool {
        c.inspect != Inspect::No
    }
    pub(super) fn proclaim(c: &Capabilities) -> bool {
        c.proclaim && inspect(c)
    }
    pub(super) fn watch(c: &Capabilities) -> bool {
        c.watch && inspect(c)
    }
    pub(super) fn list(c: &Capabilities) -> bool {
        c.list && inspect(c)
    }
    pub(super) fn counted_waiters(c: &Capabilities) -> bool {
        c.inspect == Inspect::HoldersAndWaiters
    }
}

macro_rules! define_cases {
    ($($area:ident :: $case:ident),* $(,)?
     ; optional: $($oarea:ident :: $ocase:ident if $need:ident),* $(,)?) => {
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
        /// [`crate::main!`] lists them only for suites whose claimed capabilities
        /// call for them.
        pub static CASES: &[Case] = &[
            $( Case { name: stringify!($case), needs: None, run: wrap::$case }, )*
            $( Case {
                name: stringify!($ocase),
                needs: Some((stringify!($need), needs::$need)),
                run: wrap::$ocase,
            }, )*
        ];
    };
}

define_cases! {
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
    input::unicode_keys_labels_and_values_round_trip,
    election::one_leader_at_a_time_with_increasing_terms,
    election::resign_hands_the_lead_to_the_next_candidate,
    election::a_killed_leader_is_replaced_within_its_lease,
    job::a_scheduled_job_runs_once_and_holds_at_least_for,
    multi::lock_all_is_all_or_none_under_contention,
    multi::lock_all_is_all_or_none_under_cancellation,
    multi::opposite_orders_never_deadlock,
    multi::lock_all_hands_out_a_token_per_key,
    multi::lock_all_is_lost_when_any_key_is,
    ; optional:
    at_once::several_free_keys_are_taken_at_once_or_not_at_all if several_keys_at_once,
    fairness::fifo_order if fair,
    fairness::a_fair_try_lock_takes_no_key_past_a_live_waiter if fair_on_request,
    fairness::a_fair_request_is_refused_where_waiting_is_unfair if unfair,
    read_write::readers_share if shared,
    read_write::writer_excludes_readers_and_writers if shared,
    read_write::read_write_order_is_fifo if shared_and_fair,
    read_write::read_hold_is_not_upgraded if shared,
    semaphore::at_most_limit_permits_under_contention if permits,
    semaphore::permit_tokens_increase_across_permits if permits,
    semaphore::an_expired_permit_is_reacquirable if permits_that_expire,
    semaphore::a_permit_limit_mismatch_is_a_config_error if permits,
    semaphore::a_release_wakes_one_waiter if permits,
    semaphore::a_cancelled_permit_acquire_leaves_nothing if permits,
    semaphore::a_killed_holders_permit_is_freed if permits_across_processes,
    inspect::inspection_shows_holder_mode_token_and_lease if inspect,
    inspect::a_free_key_inspects_empty if inspect,
    inspect::inspection_counts_waiters if counted_waiters,
    inspect::held_locks_are_listed_by_prefix if list,
    election::the_leader_is_shown_with_its_value_term_and_label if inspect,
    election::observe_sees_every_change_in_order if inspect,
    election::proclaim_is_seen_by_leader_and_observe if proclaim,
    election::observe_wakes_on_the_backend_signal if watch,
}

/// Whether the cases' requests are served in arrival order: always, or because
/// they ask ([`lockkit_core::LockRequest::fair`], which the cases' waiters do
/// wherever the driver takes it).
pub(crate) fn serves_in_order(c: &Capabilities) -> bool {
    c.fair || c.fair_on_request
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
