//! The targets lockkit is held to on each backend, and whether one run met them.

use crate::in_round_trips::InRoundTrips;
use crate::measure::{HANDOFF_FLOOR, LEASE};
use crate::paired::verdict;
use crate::report::us;
use crate::results::{Group, Row};

/// Target: lockkit's hand-off p50 at most this many round trips, where waiters are
/// notified.
const ROUND_TRIP_TARGET: f64 = 3.0;

/// The share of hand-offs granted before the release returned from which a
/// hand-off is judged from the release's start: a tenth.
const EARLY_GRANTS: f64 = 0.1;

/// The targets of one group, one line each.
pub(crate) fn targets(g: &Group, waiters: &[u64]) -> Vec<String> {
    let mut out = Vec::new();
    let Some(lk) = g.lockkit() else {
        return out;
    };
    let band = g.band();
    if let Some(f) = &g.floor {
        let (r, target) = (f.lockkit.p50_us / f.stats.p50_us, g.floor_target);
        out.push(format!(
            "uncontended p50 ≤ {target}× the floor: {r:.2}× — {}",
            verdict(r, target, false, band)
        ));
    }
    // Every backend here notifies lockkit's waiters (Redis and Redlock by pub/sub,
    // etcd and ZooKeeper by watches).
    for &w in waiters {
        let Some(h) = lk.handoff(w) else {
            continue;
        };
        // A gap is clamped at 0 when the next grant lands before the release
        // returns (Redlock: a grant needs a majority of masters released, the
        // release waits for all of them; a herd: the waiters' attempts hold up
        // the release's return). Where that is common, the gaps time the
        // release's tail, not the hand-off: judged from the release's start
        // instead, the release included, so stricter.
        let from_start = match &h.from_release_start {
            Some(s) if h.granted_before_return >= EARLY_GRANTS => s,
            _ => {
                out.push(format!(
                    "hand-off p50 ≤ {ROUND_TRIP_TARGET}× one round trip, {w} waiters: {}",
                    in_round_trips(g, h.stats.p50_us, h.in_round_trips, band)
                ));
                continue;
            }
        };
        // Timed so, a hand-off holds a whole release and a whole acquire: at
        // least the floor's pair.
        let pair = g.floor.as_ref().map_or_else(String::new, |f| {
            format!(
                " (the floor's acquire + release, which it contains, is {}: {:.2}× that)",
                us(f.stats.p50_us),
                from_start.p50_us / f.stats.p50_us
            )
        });
        out.push(format!(
            "hand-off p50 ≤ {ROUND_TRIP_TARGET}× one round trip, {w} waiters: the next waiter \
             was granted before the release returned in {:.0}% of the hand-offs, which read \
             as 0; timed from the release's start instead (release included): {}{pair}",
            h.granted_before_return * 100.0,
            in_round_trips(
                g,
                from_start.p50_us,
                h.from_release_start_in_round_trips,
                band
            )
        ));
    }
    for peer in g.rows.iter().filter(|r| r.library != "lockkit") {
        if peer.library.ends_with(HANDOFF_FLOOR) {
            out.extend(floor_context(g, lk, peer, waiters));
            continue;
        }
        if let Some((_, why)) = g.context.iter().find(|(l, _)| *l == peer.library) {
            out.extend(context(g, lk, peer, why));
            continue;
        }
        if peer.library == LEASE {
            if let Some(p) = g.paired_with(peer) {
                out.push(format!(
                    "the watchdog costs nothing on the hot path (lockkit's uncontended rate \
                     ÷ its fixed-lease rate ≥ 1): {:.3} — {}",
                    p.median,
                    verdict(p.median, 1.0, true, band)
                ));
            }
            continue;
        }
        let mut checks = Vec::new();
        if let Some(p) = g.paired_with(peer) {
            checks.push((
                "uncontended rate".to_owned(),
                p.median,
                verdict(p.median, 1.0, true, band),
            ));
        }
        for &w in waiters {
            if let (Some(l), Some(p)) = (lk.handoff(w), peer.handoff(w)) {
                for (what, l, p) in [
                    ("p50", l.stats.p50_us, p.stats.p50_us),
                    ("p99", l.stats.p99_us, p.stats.p99_us),
                ] {
                    // A peer whose next holder was in before its release returned
                    // has no gap to compare with.
                    if p < 1.0 {
                        continue;
                    }
                    let r = l / p;
                    checks.push((
                        format!("{w}-waiter {what}"),
                        r,
                        verdict(r, 1.0, false, band),
                    ));
                }
            }
        }
        let not_met: Vec<String> = checks
            .iter()
            .filter(|(_, _, v)| *v != "met")
            .map(|(what, r, v)| format!("{what} {r:.2} {}", v.trim_matches('*')))
            .collect();
        out.push(if checks.is_empty() {
            format!("{}: no figures to compare with", peer.library)
        } else if not_met.is_empty() {
            format!(
                "at least as fast as {} on every row where both have figures — met",
                peer.library
            )
        } else if checks.iter().all(|(_, _, v)| !v.contains("missed")) {
            format!(
                "at least as fast as {} — tied: {}",
                peer.library,
                not_met.join(", ")
            )
        } else {
            format!(
                "at least as fast as {}: **missed**: {}",
                peer.library,
                not_met.join(", ")
            )
        });
    }
    out
}

/// Where the server's own hand-off floor stands, against the round trip and
/// lockkit: context for the round-trip target, not a target of its own.
fn floor_context(g: &Group, lk: &Row, floor: &Row, waiters: &[u64]) -> Vec<String> {
    let mut out = Vec::new();
    for &w in waiters {
        let (Some(l), Some(f)) = (lk.handoff(w), floor.handoff(w)) else {
            continue;
        };
        let rtt = match (f.in_round_trips, g.round_trip) {
            (Some(r), _) => format!(" = {:.1}× the round trips around its rounds", r.median),
            (None, Some(rtt)) => {
                let r = f.stats.p50_us / (rtt.as_secs_f64() * 1e6);
                format!(" = {r:.1}× one round trip")
            }
            (None, None) => String::new(),
        };
        out.push(format!(
            "context, not a target: the server's own hand-off ({}), {w} waiters: \
             p50 {}{rtt}; lockkit's p50 is {:.2}× it",
            floor.library,
            us(f.stats.p50_us),
            l.stats.p50_us / f.stats.p50_us
        ));
    }
    out
}

/// A reference row: lockkit's rate against it, and the server's CPU per pair of
/// each, as context, not a target.
fn context(g: &Group, lk: &Row, peer: &Row, why: &str) -> Option<String> {
    let p = g.paired_with(peer)?;
    let cpu = |row: &Row| {
        row.uncontended
            .as_ref()
            .ok()
            .and_then(|u| u.server_cpu)
            .map_or("–".to_owned(), |c| us(c.as_secs_f64() * 1e6))
    };
    Some(format!(
        "context, not a target: {} ({why}); lockkit's uncontended rate ÷ its: {:.2} (95% \
         interval {:.2}–{:.2}); server CPU per pair {} against {}",
        peer.library,
        p.median,
        p.low,
        p.high,
        cpu(lk),
        cpu(peer)
    ))
}

/// A hand-off p50 of `p50_us` against the round trip: in the round trips
/// measured around its rounds, judged by its interval, or else against the
/// group's one round trip.
fn in_round_trips(g: &Group, p50_us: f64, r: Option<InRoundTrips>, band: f64) -> String {
    match (r, g.round_trip) {
        (Some(r), _) => format!(
            "p50 {} = {:.2}× the round trips around its rounds ({} to {}; 95% interval \
             {:.2}–{:.2}×) — {}",
            us(p50_us),
            r.median,
            us(r.round_trip_low_us),
            us(r.round_trip_high_us),
            r.low,
            r.high,
            r.verdict(ROUND_TRIP_TARGET, band)
        ),
        (None, Some(rtt)) => {
            let rtt_us = rtt.as_secs_f64() * 1e6;
            let r = p50_us / rtt_us;
            format!(
                "p50 {} = {r:.1}× one round trip ({}) — {}",
                us(p50_us),
                us(rtt_us),
                verdict(r, ROUND_TRIP_TARGET, false, band)
            )
        }
        (None, None) => "no round trip measured".to_owned(),
    }
}
