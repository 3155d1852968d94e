//! The checker: stale writes, token order and mutual exclusion, from a history.

use std::collections::HashMap;

use serde::Serialize;

use super::record::{GrantId, History};

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
    /// (b) Consecutive grants (in the order granted) whose token did not increase,
    /// as `(earlier token, later token)`.
    pub token_regressions: Vec<(u64, u64)>,
    /// (c) Pairs of grants whose known-held intervals overlap, as
    /// `(earlier client's token, later client's token)`.
    pub overlaps: Vec<(u64, u64)>,
}

impl Verdict {
    /// No stale write accepted, tokens strictly increasing, no overlap.
    pub fn is_safe(&self) -> bool {
        self.stale_accepted == 0 && self.token_regressions.is_empty() && self.overlaps.is_empty()
    }
}

/// Judges a history.
///
/// Grants are ordered by the time their acquire returned (`granted`). When the lock
/// is exclusive, that is the order in which the backend granted them: a grant `g2`
/// given after `g1` is given after `g1`'s hold ended, which is after `g1`'s client
/// started releasing, which is after `g1` returned; so `g1.granted < g2.granted`.
///
/// **(a) Stale writes.** Walking the writes in the resource's order, a write is
/// stale when a grant ranked after its own has already had a write (accepted or
/// not) decided by the resource. With tokens that increase in grant order, the
/// [`FencedCell`](lockkit_core::fence::FencedCell) refuses every such write; when
/// tokens go backwards (a Redis restart without persistence), it accepts them.
///
/// **(b) Token order.** Consecutive grants must have strictly increasing tokens
/// (which, by transitivity, orders all of them).
///
/// **(c) Mutual exclusion.** Each grant has the half-open interval
/// `[granted, held_until)` in which its client knew it held the lock; that interval
/// lies inside the real hold (granted no later than the acquire returned, and held at
/// least until the client released, was told of the loss, or its lease deadline
/// passed — the lease the backend promised). So overlapping intervals prove two
/// real holders at once. The check sorts intervals by start and compares each start
/// with the latest end so far. *Sound:* if interval `j` starts before that latest
/// end, which belongs to some `k` that started no later, `k` and `j` overlap.
/// *Complete:* if some `i` and `j` overlap with `i` starting first, then `j` starts
/// before `i`'s end, which is at most the latest end seen before `j`, so `j` is
/// reported. Open intervals (a grant never closed) count as ending at `granted`.
pub fn check(history: &History) -> Verdict {
    let mut order: Vec<usize> = (0..history.grants.len()).collect();
    order.sort_by_key(|&i| (history.grants[i].granted, i));
    let rank: HashMap<GrantId, usize> = order
        .iter()
        .enumerate()
        .map(|(r, &i)| (GrantId(i), r))
        .collect();

    let token_regressions = order
        .windows(2)
        .map(|w| (history.grants[w[0]].token, history.grants[w[1]].token))
        .filter(|(a, b)| b <= a)
        .collect();

    let mut overlaps = Vec::new();
    let mut latest: Option<usize> = None;
    for &i in &order {
        let g = &history.grants[i];
        if let Some(k) = latest {
            let other = &history.grants[k];
            if g.granted < end(other) {
                overlaps.push((other.token, g.token));
            }
            if end(g) > end(other) {
                latest = Some(i);
            }
        } else {
            latest = Some(i);
        }
    }

    let mut writes: Vec<_> = history.writes.iter().collect();
    writes.sort_by_key(|w| w.seq);
    let mut verdict = Verdict {
        operations: history.operations(),
        grants: history.grants.len(),
        writes: writes.len(),
        token_regressions,
        overlaps,
        ..Verdict::default()
    };
    let mut newest_written: Option<usize> = None;
    for w in writes {
        let Some(&r) = rank.get(&w.grant) else {
            continue;
        };
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

fn end(g: &super::record::GrantRecord) -> tokio::time::Instant {
    g.held_until.unwrap_or(g.granted).max(g.granted)
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
        assert_eq!(check(&h).token_regressions, vec![(5, 5), (5, 1)]);
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
}
