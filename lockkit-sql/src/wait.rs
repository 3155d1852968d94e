//! Polling with jittered exponential backoff, for backends without a release signal.

use std::time::Duration;

/// The first pause between attempts.
pub(crate) const FIRST: Duration = Duration::from_millis(2);
/// The longest pause between attempts: bounds the hand-off latency of polling.
pub(crate) const CAP: Duration = Duration::from_millis(50);

/// The pause sequence: doubling from [`FIRST`] to [`CAP`], each with ±50 % jitter so
/// waiters do not poll in lockstep.
#[derive(Debug)]
pub(crate) struct Backoff {
    next: Duration,
}

impl Backoff {
    pub(crate) fn new() -> Self {
        Self { next: FIRST }
    }

    pub(crate) fn next_pause(&mut self) -> Duration {
        let base = self.next;
        self.next = (self.next * 2).min(CAP);
        let jitter = fastrand::f64() + 0.5;
        base.mul_f64(jitter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_grow_to_the_cap_with_jitter() {
        let mut b = Backoff::new();
        let pauses: Vec<Duration> = (0..20).map(|_| b.next_pause()).collect();
        assert!(pauses[0] <= FIRST.mul_f64(1.5));
        assert!(pauses.iter().all(|p| *p <= CAP.mul_f64(1.5)));
        assert!(pauses[19] >= CAP.mul_f64(0.5));
    }
}
