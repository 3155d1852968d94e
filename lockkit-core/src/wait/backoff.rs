//! [`Backoff`]: pauses that double from a first one to a cap, with jitter.

use std::time::Duration;

/// How pauses are spread so that waiters do not retry in lockstep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Jitter {
    /// Exactly the pause.
    None,
    /// The pause times a random factor in [0.5, 1.5).
    Spread,
}

/// Pauses doubling from `first` to `cap`, each with [`Jitter`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use lockkit::driver::{Backoff, Jitter};
///
/// let mut pauses = Backoff::new(Duration::from_millis(2), Duration::from_millis(50), Jitter::None).pauses();
/// let first: Vec<u128> = (0..6).map(|_| pauses.next_pause().as_millis()).collect();
/// assert_eq!(first, [2, 4, 8, 16, 32, 50]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Backoff {
    /// The first pause.
    pub first: Duration,
    /// The longest pause.
    pub cap: Duration,
    /// How each pause is spread.
    pub jitter: Jitter,
}

impl Backoff {
    /// Pauses from `first`, doubling up to `cap`, spread by `jitter`.
    pub const fn new(first: Duration, cap: Duration, jitter: Jitter) -> Self {
        Self { first, cap, jitter }
    }

    /// A fresh sequence of pauses.
    pub fn pauses(&self) -> Pauses {
        Pauses {
            backoff: *self,
            next: self.first,
        }
    }
}

/// One sequence of [`Backoff`] pauses.
#[derive(Debug, Clone)]
pub struct Pauses {
    backoff: Backoff,
    next: Duration,
}

impl Pauses {
    /// The next pause; the one after it doubles, up to the cap.
    pub fn next_pause(&mut self) -> Duration {
        let base = self.next;
        self.next = (self.next * 2).min(self.backoff.cap);
        match self.backoff.jitter {
            Jitter::None => base,
            Jitter::Spread => base.mul_f64(fastrand::f64() + 0.5),
        }
    }

    /// Starts again from the first pause.
    pub fn reset(&mut self) {
        self.next = self.backoff.first;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_pauses_grow_to_the_cap_within_half_either_way() {
        let cap = Duration::from_millis(50);
        let mut p = Backoff::new(Duration::from_millis(2), cap, Jitter::Spread).pauses();
        let pauses: Vec<Duration> = (0..20).map(|_| p.next_pause()).collect();
        assert!(pauses[0] <= Duration::from_millis(3));
        assert!(pauses.iter().all(|d| *d <= cap.mul_f64(1.5)));
        assert!(pauses[19] >= cap.mul_f64(0.5));
        p.reset();
        assert!(p.next_pause() <= Duration::from_millis(3));
    }
}
