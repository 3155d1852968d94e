//! The conformance suite's case lists the SQL test files share.

/// The suite for a lease-mode harness: every mode, inspection, elections and
/// listing; then the cases only some databases pass.
macro_rules! lease_suite {
    ($name:ident, $harness:ty $(, $extra:ident)*) => {
        lockkit_conformance::suite!(
            $name,
            $harness,
            with {
                readers_share,
                writer_excludes_readers_and_writers,
                read_hold_is_not_upgraded,
                at_most_limit_permits_under_contention,
                permit_tokens_increase_across_permits,
                an_expired_permit_is_reacquirable,
                a_permit_limit_mismatch_is_a_config_error,
                a_release_wakes_one_waiter,
                a_cancelled_permit_acquire_leaves_nothing,
                a_killed_holders_permit_is_freed,
                inspection_shows_holder_mode_token_and_lease,
                a_free_key_inspects_empty,
                the_leader_is_shown_with_its_value_term_and_label,
                observe_sees_every_change_in_order,
                held_locks_are_listed_by_prefix,
                proclaim_is_seen_by_leader_and_observe,
                $($extra,)*
            }
        );
    };
}
