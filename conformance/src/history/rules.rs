//! The checker's rules (b) to (d) over grants in the order they returned: token
//! order, exclusion and the permit limit (see [`super::check`]).

use lockkit_core::LockMode;

use super::record::History;

/// (b): every grant's token against those it must exceed; `order` is by `granted`.
pub(super) fn token_order(history: &History, order: &[usize]) -> Vec<(u64, u64)> {
    let grants = &history.grants;
    // The highest token among the first n grants returned, for n = 0, 1, ….
    let mut highest = vec![0u64];
    for &i in order {
        let last = highest[highest.len() - 1];
        highest.push(last.max(grants[i].token));
    }
    let returned_before = |at| order.partition_point(|&i| grants[i].granted < at);
    let mut regressions = Vec::new();
    let mut last_exclusive: Option<u64> = None;
    for (n, &i) in order.iter().enumerate() {
        let g = &grants[i];
        let bound = if g.mode == LockMode::Exclusive {
            (n > 0).then(|| highest[n])
        } else {
            let m = returned_before(g.invoked);
            let invoked_after = (m > 0).then(|| highest[m]);
            invoked_after.max(last_exclusive)
        };
        if let Some(bound) = bound.filter(|b| g.token <= *b) {
            regressions.push((bound, g.token));
        }
        if g.mode == LockMode::Exclusive {
            last_exclusive = last_exclusive.max(Some(g.token));
        }
    }
    regressions
}

/// (c) and (d): the overlapping pairs that exclude each other, the permits over
/// their limit, and the most grants known held at once; `order` is by `granted`.
pub(super) fn exclusion(history: &History, order: &[usize]) -> (Vec<(u64, u64)>, Vec<u64>, usize) {
    let grants = &history.grants;
    let (mut overlaps, mut over_limit, mut most) = (Vec::new(), Vec::new(), 0);
    let mut open: Vec<usize> = Vec::new();
    for &i in order {
        let g = &grants[i];
        open.retain(|&k| end(&grants[k]) > g.granted);
        for &k in &open {
            if !g.mode.compatible_with(grants[k].mode) {
                overlaps.push((grants[k].token, g.token));
            }
        }
        if let Some(limit) = g.mode.limit() {
            let permits = open.iter().filter(|&&k| grants[k].mode.limit().is_some());
            if permits.count() >= limit as usize {
                over_limit.push(g.token);
            }
        }
        most = most.max(open.len() + 1);
        if end(g) > g.granted {
            open.push(i);
        }
    }
    (overlaps, over_limit, most)
}

fn end(g: &super::record::GrantRecord) -> tokio::time::Instant {
    g.held_until.unwrap_or(g.granted).max(g.granted)
}
