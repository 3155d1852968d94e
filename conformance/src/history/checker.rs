//! The checker: stale writes, token order, exclusion and the permit limit, from a
//! history.

use std::collections::HashMap;

use lockkit_core::LockMode;
use serde::Serialize;

use super::record::{GrantId, History};
use super::rules::{exclusion, token_order};

/// What [`check`] found in a history.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// Acquires (granted or failed), writes and releases.
    pub operations: usize,
    /// Successful acquires.
    pub grants: usize,
    /// Writes the resource saw.
    pub writes: usize,
    /// (a) Writes from a grant older than one that had already written: refused.
    pub stale_rejected: usize,
    /// (a) The same, accepted: a safety violation.
    pub stale_accepted: usize,
    /// Writes from the newest grant to have written that the resource refused: a
    /// holder locked out of the resource (after tokens went backwards).
    pub current_rejected: usize,
    /// Writes applied after a newer grant was given but before that grant's first
    /// write reached the resource. Fencing cannot see these (the resource does not
    /// know the newer token yet); they are counted, not judged.
    pub late_accepted: usize,
    /// (b) Grants whose token is not above a token it must exceed, as `(the
    /// highest such token, the grant's token)`.
    pub token_regressions: Vec<(u64, u64)>,
    /// (c) Pairs of grants whose known-held intervals overlap although their modes
    /// exclude each other (a writer with anyone), as `(earlier client's token,
    /// later client's token)`.
    pub overlaps: Vec<(u64, u64)>,
    /// (d) Permits granted while their semaphore's limit was already known held,
    /// by token.
    pub over_limit: Vec<u64>,
    /// The most grants known held at once.
    pub max_holders: usize,
}

impl Verdict {
    /// No stale write accepted, tokens increasing, no excluded overlap, and never
    /// more permits than the limit.
    pub fn is_safe(&self) -> bool {
        self.stale_accepted == 0
            && self.token_regressions.is_empty()
            && self.overlaps.is_empty()
            && self.over_limit.is_empty()
    }
}

/// Judges a history.
///
/// Grants are ordered by the time their acquire returned (`granted`). When a grant
/// `g2` is exclusive, that is the order in which the backend granted it after every
/// earlier one: a grant `g1` that returned first was granted by the server before it
/// returned, and if that were after `g2`'s grant it would fall inside `g2`'s hold.
/// Shared holds and permits may be granted together and return in any order.
///
/// **(a) Stale writes.** Walking the writes in the resource's order, a write is
/// stale when a grant ranked after its own has already had a write (accepted or
/// not) decided by the resource. With tokens that increase in grant order, the
/// [`FencedCell`](lockkit_core::fence::FencedCell) refuses every such write; when
/// tokens go backwards (a Redis restart without persistence), it accepts them.
/// Permits write side by side, so a permit's write is stale only when it is made
/// after its hold ended and a grant given after that end has already written; its
/// writes within its hold are not judged (a concurrent permit with a higher token
/// may have written first).
///
/// **(b) Token order.** An exclusive grant's token is above every token returned
/// before it. A shared hold's or a permit's is above every exclusive token returned
/// before it, and above every token returned before its own acquire was invoked:
/// concurrent permits may return out of token order, but never one that started
/// after another had returned.
///
/// **(c) Exclusion.** Each grant has the half-open interval `[granted, held_until)`
/// in which its client knew it held the lock; that interval lies inside the real
/// hold (granted no later than the acquire returned, and held at least until the
/// client released, was told of the loss, or its lease deadline passed — the lease
/// the backend promised). So two overlapping intervals prove two real holders at
/// once, which only readers, or permits, may be. The check walks the grants by
/// start, keeping those whose interval is still open: each new grant is compared
/// with every one of them, so every overlapping pair is seen. Open intervals (a
/// grant never closed) count as ending at `granted`.
///
/// **(d) The permit limit.** A permit that starts while its limit of permits are
/// already known held is one too many.
pub fn check(history: &History) -> Verdict {
    let grants = &history.grants;
    let mut order: Vec<usize> = (0..grants.len()).collect();
    order.sort_by_key(|&i| (grants[i].granted, i));
    let rank: HashMap<GrantId, usize> = order
        .iter()
        .enumerate()
        .map(|(r, &i)| (GrantId(i), r))
        .collect();

    let (overlaps, over_limit, max_holders) = exclusion(history, &order);
    let mut writes: Vec<_> = history.writes.iter().collect();
    writes.sort_by_key(|w| w.seq);
    let mut verdict = Verdict {
        operations: history.operations(),
        grants: grants.len(),
        writes: writes.len(),
        token_regressions: token_order(history, &order),
        overlaps,
        over_limit,
        max_holders,
        ..Verdict::default()
    };
    let mut newest_written: Option<usize> = None;
    for w in writes {
        let Some(&r) = rank.get(&w.grant) else {
            continue;
        };
        let g = &grants[w.grant.0];
        if g.mode != LockMode::Exclusive {
            // Permits write side by side, in any order: only a write made after its
            // hold ended, once a grant given after that end has written, is judged.
            let ended = g.held_until.unwrap_or(g.granted);
            let overtaken = newest_written.is_some_and(|n| grants[order[n]].granted >= ended);
            if w.invoked >= ended && overtaken {
                match w.accepted {
                    true => verdict.stale_accepted += 1,
                    false => verdict.stale_rejected += 1,
                }
            }
            newest_written = Some(newest_written.map_or(r, |n| n.max(r)));
            continue;
        }
        let stale = newest_written.is_some_and(|n| n > r);
        match (stale, w.accepted) {
            (true, true) => verdict.stale_accepted += 1,
            (true, false) => verdict.stale_rejected += 1,
            (false, false) => verdict.current_rejected += 1,
            (false, true) => {
                // Accepted from the newest writer: was a newer grant already given?
                // Grants are in `granted` order, so the next one tells.
                let newer_granted = order
                    .get(r + 1)
                    .is_some_and(|&i| history.grants[i].granted < w.applied);
                if newer_granted {
                    verdict.late_accepted += 1;
                }
            }
        }
        newest_written = Some(newest_written.map_or(r, |n| n.max(r)));
    }
    verdict
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::*;
    use crate::history::{GrantRecord, WriteRecord};

    fn at(base: Instant, ms: u64) -> Instant {
        base + Duration::from_millis(ms)
    }

    /// Grants `(token, granted ms, held until ms)`, writes `(grant, token, accepted)`
    /// in resource order, each applied 1 ms after the previous.
    fn history(grants: &[(u64, u64, u64)], writes: &[(usize, u64, bool)]) -> History {
        let base = Instant::now();
        History {
            grants: grants
                .iter()
                .enumerate()
                .map(|(c, &(token, from, until))| GrantRecord {
                    client: c,
                    mode: LockMode::Exclusive,
                    token,
                    invoked: at(base, from.saturating_sub(1)),
                    granted: at(base, from),
                    held_until: Some(at(base, until)),
                })
                .collect(),
            writes: writes
                .iter()
                .enumerate()
                .map(|(seq, &(grant, token, accepted))| WriteRecord {
                    grant: GrantId(grant),
                    token,
                    invoked: at(base, 1000 + seq as u64),
                    seq: seq as u64,
                    applied: at(base, 1000 + seq as u64),
                    accepted,
                })
                .collect(),
            failures: Vec::new(),
            releases: grants.len(),
        }
    }

    #[test]
    fn a_clean_history_is_safe() {
        let h = history(
            &[(1, 0, 10), (2, 10, 20), (3, 25, 30)],
            &[(0, 1, true), (1, 2, true), (2, 3, true)],
        );
        let v = check(&h);
        assert!(v.is_safe(), "{v:?}");
        assert_eq!((v.grants, v.writes, v.operations), (3, 3, 9));
        assert_eq!(
            (v.stale_accepted, v.stale_rejected, v.current_rejected),
            (0, 0, 0)
        );
    }

    #[test]
    fn overlapping_holds_are_found_whatever_the_order_recorded() {
        // The second grant starts inside the first; the third inside the first too,
        // after the second ended (only the running maximum end catches it).
        let h = history(&[(3, 20, 25), (1, 0, 100), (2, 10, 15)], &[]);
        let v = check(&h);
        assert_eq!(v.overlaps, vec![(1, 2), (1, 3)]);
        // Touching intervals ([0,10) and [10,20)) do not overlap.
        assert!(
            check(&history(&[(1, 0, 10), (2, 10, 20)], &[]))
                .overlaps
                .is_empty()
        );
    }

    #[test]
    fn tokens_that_do_not_increase_in_grant_order_are_regressions() {
        let h = history(&[(5, 0, 10), (5, 10, 20), (1, 20, 30), (2, 30, 40)], &[]);
        assert_eq!(check(&h).token_regressions, vec![(5, 5), (5, 1), (5, 2)]);
    }

    #[test]
    fn an_old_grants_write_after_a_newer_grants_write_is_stale() {
        // Grant 0 (token 1) is paused; grant 1 (token 2) writes; grant 0 resumes.
        let h = history(
            &[(1, 0, 10), (2, 20, 30)],
            &[(0, 1, true), (1, 2, true), (0, 1, false)],
        );
        let v = check(&h);
        assert_eq!((v.stale_rejected, v.stale_accepted), (1, 0));
        assert!(v.is_safe());
    }

    #[test]
    fn a_token_reset_shows_as_a_locked_out_holder_and_an_accepted_stale_write() {
        // After a reset the new holder gets token 1 < 7: its write is refused, and
        // the old holder's next write is accepted although a newer grant wrote.
        let h = history(
            &[(7, 0, 50), (1, 20, 30)],
            &[(0, 7, true), (1, 1, false), (0, 7, true)],
        );
        let v = check(&h);
        assert_eq!((v.current_rejected, v.stale_accepted), (1, 1));
        assert_eq!(v.token_regressions, vec![(7, 1)]);
        assert_eq!(v.overlaps, vec![(7, 1)]);
        assert!(!v.is_safe());
    }

    #[test]
    fn a_write_before_the_new_holders_first_write_is_late_not_stale() {
        let h = history(
            &[(1, 0, 10), (2, 20, 30)],
            &[(0, 1, true), (0, 1, true), (1, 2, true)],
        );
        // Both of grant 0's writes are applied at 1000+ ms, after grant 1 (20 ms).
        let v = check(&h);
        assert_eq!((v.late_accepted, v.stale_accepted), (2, 0));
    }

    /// Grants `(mode, token, invoked ms, granted ms, held until ms)`, no writes.
    fn holds(grants: &[(LockMode, u64, u64, u64, u64)]) -> History {
        let base = Instant::now();
        History {
            grants: grants
                .iter()
                .enumerate()
                .map(|(c, &(mode, token, invoked, from, until))| GrantRecord {
                    client: c,
                    mode,
                    token,
                    invoked: at(base, invoked),
                    granted: at(base, from),
                    held_until: Some(at(base, until)),
                })
                .collect(),
            ..History::default()
        }
    }

    const P3: LockMode = LockMode::Permit { limit: 3 };

    #[test]
    fn readers_may_overlap_but_a_writer_overlaps_no_one() {
        let (r, w) = (LockMode::Shared, LockMode::Exclusive);
        let v = check(&holds(&[
            (r, 1, 0, 1, 10),
            (r, 2, 0, 2, 10),
            (w, 3, 0, 10, 20),
        ]));
        assert!(v.is_safe(), "{v:?}");
        assert_eq!(v.max_holders, 2);
        let v = check(&holds(&[
            (r, 1, 0, 1, 10),
            (w, 2, 0, 5, 20),
            (r, 3, 0, 15, 30),
        ]));
        assert_eq!(v.overlaps, vec![(1, 2), (2, 3)]);
    }

    #[test]
    fn permits_overlap_up_to_their_limit_and_no_further() {
        let three = [(P3, 1, 0, 1, 10), (P3, 2, 0, 2, 10), (P3, 3, 0, 3, 10)];
        let v = check(&holds(&three));
        assert!(v.is_safe(), "{v:?}");
        assert_eq!(v.max_holders, 3);
        let mut four = three.to_vec();
        four.push((P3, 4, 0, 4, 10));
        let v = check(&holds(&four));
        assert_eq!((v.over_limit.clone(), v.max_holders), (vec![4], 4));
        assert!(!v.is_safe());
    }

    #[test]
    fn concurrent_permits_may_return_out_of_token_order_but_later_ones_may_not() {
        // Tokens 2 and 1 were granted together and returned in that order: fine.
        let v = check(&holds(&[(P3, 2, 0, 1, 10), (P3, 1, 0, 2, 10)]));
        assert!(v.token_regressions.is_empty(), "{v:?}");
        // A permit invoked after token 5 had returned must be above it.
        let v = check(&holds(&[(P3, 5, 0, 1, 10), (P3, 4, 2, 3, 10)]));
        assert_eq!(v.token_regressions, vec![(5, 4)]);
        // And above every writer's token returned before it.
        let w = LockMode::Exclusive;
        let v = check(&holds(&[(w, 7, 0, 1, 2), (LockMode::Shared, 6, 0, 3, 10)]));
        assert_eq!(v.token_regressions, vec![(7, 6)]);
    }
}
