//! The clock lease expiries are stored in.
//!
//! SQLite has no server clock, and every process sharing the file must agree on
//! "now" (invariant S3). `CLOCK_MONOTONIC` is machine-wide (the same for all
//! processes on a host), never jumps with wall-clock changes, and is what
//! `std::time::Instant` reads on Linux. So expiries are milliseconds on that
//! clock — which also means a SQLite lock file must only be shared by processes
//! on one machine (as SQLite itself requires).
//!
//! Milliseconds are rounded so that a lease never ends early: "now" is rounded
//! down, a lease's expiry up. A holder keeps its lease until its request's start
//! plus the TTL, on the same clock, and the stored expiry is never before that.

use std::time::Duration;

use rustix::time::{ClockId, clock_gettime};

const NANOS_PER_MS: i64 = 1_000_000;

/// One reading of the machine-wide monotonic clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reading {
    nanos: i64,
}

impl Reading {
    /// Reads the clock.
    pub(crate) fn now() -> Self {
        let ts = clock_gettime(ClockId::Monotonic);
        Self {
            nanos: ts.tv_sec.saturating_mul(1_000_000_000) + ts.tv_nsec,
        }
    }

    /// "Now", for judging whether a lease has run out: rounded down, so that no
    /// lease is judged over early.
    pub(crate) fn ms(self) -> i64 {
        self.nanos.div_euclid(NANOS_PER_MS)
    }

    /// "Now", for showing how much of a lease is left: rounded up, as expiries
    /// are, so that no lease shows more left than its TTL.
    pub(crate) fn ms_up(self) -> i64 {
        self.expiry(Duration::ZERO)
    }

    /// The expiry of a lease of `ttl` granted or renewed now: rounded up, so that
    /// it is never before the holder's own deadline.
    pub(crate) fn expiry(self, ttl: Duration) -> i64 {
        let ttl = i64::try_from(ttl.as_nanos()).unwrap_or(i64::MAX / 2);
        self.nanos
            .saturating_add(ttl)
            .saturating_add(NANOS_PER_MS - 1)
            .div_euclid(NANOS_PER_MS)
    }
}

/// Milliseconds on the machine-wide monotonic clock, rounded down ([`Reading::ms`]).
pub(crate) fn monotonic_ms() -> i64 {
    Reading::now().ms()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn now_rounds_down_and_an_expiry_rounds_up() {
        let at = Reading {
            nanos: 1_000_700_000,
        }; // 1000.7 ms
        assert_eq!(at.ms(), 1000);
        assert_eq!(at.expiry(600 * MS), 1601);
        assert_eq!(at.expiry(600 * MS + MS / 2), 1602);
    }

    #[test]
    fn an_expiry_on_a_whole_millisecond_is_that_millisecond() {
        let at = Reading {
            nanos: 1_000_000_000,
        };
        assert_eq!(at.ms(), 1000);
        assert_eq!(at.expiry(600 * MS), 1600);
    }

    #[test]
    fn a_lease_never_shows_more_left_than_its_ttl() {
        let granted = Reading {
            nanos: 1_000_700_000,
        };
        let shown = Reading {
            nanos: 1_000_900_000,
        };
        assert!(granted.expiry(600 * MS) - shown.ms_up() <= 600);
    }

    #[test]
    fn a_lease_is_never_over_before_its_ttl_has_passed() {
        // The conformance failure this guards against: granted at 1000.7 ms, and
        // judged over at 1600.3 ms by a reading rounded down to 1600, because the
        // expiry was stored as 1000 + 600.
        let granted = Reading {
            nanos: 1_000_700_000,
        };
        let later = Reading {
            nanos: 1_600_300_000,
        };
        assert!(later.ms() < granted.expiry(600 * MS));
    }
}
