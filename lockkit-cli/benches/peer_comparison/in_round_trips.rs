//! Hand-offs counted in round trips, each against the round trip measured around
//! its own round.
//!
//! A round trip measured once per backend drifts more than the hand-offs it
//! divides: on this 2-CPU machine, blocks of 200 PostgreSQL round trips a
//! second apart read 79–141 µs within one run, while lockkit's 8-waiter hand-off
//! p50 moved 282–311 µs across eight runs. A hand-off round is fast or slow with
//! the round trips measured beside it. So the runner brackets every hand-off
//! round with a block of the backend's cheapest requests, just before its go and
//! just after it ends (the next round's block), and divides each hand-off by the
//! mean of the two blocks' p50s. The ratio is the median over every hand-off;
//! its 95% interval is bootstrapped over rounds, the unit the drift moves, and
//! judges the target with the run's noise band.

use crate::paired::{bootstrap, median, verdict_between};

/// Requests in one block: about 20 ms on a LAN-like round trip of 100 µs.
pub(crate) const BLOCK: usize = 200;

/// Hand-offs ÷ the round trips measured around their rounds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InRoundTrips {
    /// The median over every hand-off of its time ÷ its round's round trip.
    pub(crate) median: f64,
    /// The 95% bootstrap interval of that median, resampling rounds.
    pub(crate) low: f64,
    pub(crate) high: f64,
    /// The lowest and highest block p50 around these rounds, in µs.
    pub(crate) round_trip_low_us: f64,
    pub(crate) round_trip_high_us: f64,
}

impl InRoundTrips {
    /// How the ratio stands against `target`, which lower values meet: by its
    /// whole interval, widened by the run's noise `band`.
    pub(crate) fn verdict(&self, target: f64, band: f64) -> &'static str {
        verdict_between(self.low, self.high, target, false, band)
    }
}

/// `times_ns` split into rounds of `per_round` hand-offs each, against the
/// blocks' p50s `round_trips_ns` (one before each round and one after the
/// last); `None` unless every round has its two blocks.
pub(crate) fn in_round_trips(
    times_ns: &[u64],
    per_round: &[usize],
    round_trips_ns: &[u64],
) -> Option<InRoundTrips> {
    if per_round.is_empty()
        || round_trips_ns.len() != per_round.len() + 1
        || per_round.iter().sum::<usize>() != times_ns.len()
        || round_trips_ns.contains(&0)
    {
        return None;
    }
    let mut rounds: Vec<Vec<f64>> = Vec::with_capacity(per_round.len());
    let mut rest = times_ns;
    for (i, &n) in per_round.iter().enumerate() {
        let (these, after) = rest.split_at(n);
        rest = after;
        let round_trip = (round_trips_ns[i] + round_trips_ns[i + 1]) as f64 / 2.0;
        rounds.push(these.iter().map(|&t| t as f64 / round_trip).collect());
    }
    let pooled = |picked: &mut dyn Iterator<Item = usize>| {
        median(picked.flat_map(|i| rounds[i].iter().copied()).collect())
    };
    let all = pooled(&mut (0..rounds.len()));
    if all.is_nan() || all <= 0.0 {
        return None;
    }
    let (low, high) = bootstrap(rounds.len(), |picked| pooled(&mut picked.iter().copied()));
    let us = |ns: &u64| *ns as f64 / 1000.0;
    Some(InRoundTrips {
        median: all,
        low,
        high,
        round_trip_low_us: round_trips_ns.iter().map(us).fold(f64::INFINITY, f64::min),
        round_trip_high_us: round_trips_ns.iter().map(us).fold(0.0, f64::max),
    })
}
