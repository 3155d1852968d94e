//! The clock lease expiries are stored in.
//!
//! SQLite has no server clock, and every process sharing the file must agree on
//! "now". `CLOCK_MONOTONIC` is machine-wide (the same for all processes on a host),
//! never jumps with wall-clock changes, and is what `std::time::Instant` reads on
//! Linux. So expiries are milliseconds on that clock — which also means a SQLite lock
//! file must only be shared by processes on one machine (as SQLite itself requires).

use rustix::time::{ClockId, clock_gettime};

/// Milliseconds on the machine-wide monotonic clock.
pub(crate) fn monotonic_ms() -> i64 {
    let ts = clock_gettime(ClockId::Monotonic);
    ts.tv_sec.saturating_mul(1000) + i64::from(ts.tv_nsec as i32 / 1_000_000)
}
