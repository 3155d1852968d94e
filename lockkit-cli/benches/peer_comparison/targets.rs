//! The targets lockkit is held to on each backend, and whether one run met them.

use crate::report::{ratio, us};
use crate::results::Group;

/// Target: lockkit's uncontended p50 at most this many times the floor's.
const FLOOR_TARGET: f64 = 1.2;
/// Target: lockkit's hand-off p50 at most this many round trips, where waiters are
/// notified.
const ROUND_TRIP_TARGET: f64 = 3.0;

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "**missed**" }
}

/// The targets of one group, one line each.
pub(crate) fn targets(g: &Group, waiters: &[u64]) -> Vec<String> {
    let mut out = Vec::new();
    let Some(lk) = g.lockkit() else {
        return out;
    };
    if let Some(f) = &g.floor {
        let r = f.lockkit.p50_us / f.stats.p50_us;
        out.push(format!(
            "uncontended p50 ≤ {FLOOR_TARGET}× the floor: {r:.2}× — {}",
            verdict(r <= FLOOR_TARGET)
        ));
    }
    // Every backend here notifies lockkit's waiters (Redis and Redlock by pub/sub,
    // etcd and ZooKeeper by watches).
    if let Some(rtt) = g.round_trip {
        let rtt_us = rtt.as_secs_f64() * 1e6;
        for &w in waiters {
            if let Some(h) = lk.handoff(w) {
                let r = h.stats.p50_us / rtt_us;
                out.push(format!(
                    "hand-off p50 ≤ {ROUND_TRIP_TARGET}× one round trip ({}), {w} waiters: \
                     {r:.1}× — {}",
                    us(rtt_us),
                    verdict(r <= ROUND_TRIP_TARGET)
                ));
            }
        }
    }
    for peer in g.rows.iter().filter(|r| r.library != "lockkit") {
        let (mut misses, mut compared) = (Vec::new(), 0);
        if let (Ok(l), Ok(p)) = (&lk.uncontended, &peer.uncontended) {
            compared += 1;
            if l.per_second < p.per_second {
                misses.push(format!(
                    "uncontended rate {}",
                    ratio(l.per_second, p.per_second)
                ));
            }
        }
        for &w in waiters {
            if let (Some(l), Some(p)) = (lk.handoff(w), peer.handoff(w)) {
                compared += 1;
                if l.stats.p50_us > p.stats.p50_us {
                    misses.push(format!(
                        "{w}-waiter p50 {}",
                        ratio(l.stats.p50_us, p.stats.p50_us)
                    ));
                }
                if l.stats.p99_us > p.stats.p99_us {
                    misses.push(format!(
                        "{w}-waiter p99 {}",
                        ratio(l.stats.p99_us, p.stats.p99_us)
                    ));
                }
            }
        }
        out.push(if compared == 0 {
            format!("{}: no figures to compare with", peer.library)
        } else if misses.is_empty() {
            format!(
                "at least as fast as {} on every row where both have figures — met",
                peer.library
            )
        } else {
            format!(
                "at least as fast as {}: **missed** on {}",
                peer.library,
                misses.join(", ")
            )
        });
    }
    out
}
