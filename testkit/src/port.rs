//! Free ports on 127.0.0.1 for the servers the testkit starts.
//!
//! A port is chosen some time before the server binds it. If it came from the
//! kernel's ephemeral range (what `bind(0)` hands out), an outgoing connection of
//! any test — hundreds a second in a full run — can take it as its local port in
//! between, and the server fails with "Address already in use". So ports are drawn
//! at random from *below* the ephemeral range, which the kernel never assigns on its
//! own, and checked by binding them.

use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::TestkitError;

/// The lowest port we draw from.
const LOWEST: u16 = 10_000;

/// The start of the kernel's ephemeral port range (`ip_local_port_range`).
fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

/// A cheap per-process random sequence (xorshift), seeded by the pid and the time:
/// enough to keep concurrent test processes from drawing the same ports.
fn next_random() -> u64 {
    static STATE: AtomicU64 = AtomicU64::new(0);
    let mut x = STATE.load(Ordering::Relaxed);
    if x == 0 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        x = nanos ^ (u64::from(std::process::id()) << 32) | 1;
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    STATE.store(x, Ordering::Relaxed);
    x
}

/// A port on 127.0.0.1 that was free a moment ago, outside the ephemeral range
/// where possible (see the module docs); `bind(0)` as the last resort.
///
/// # Errors
///
/// An I/O error if no port can be bound.
pub fn free_port() -> Result<u16, TestkitError> {
    let high = ephemeral_start();
    if high > LOWEST + 1_000 {
        let span = u64::from(high - LOWEST);
        for _ in 0..200 {
            let port = LOWEST + (next_random() % span) as u16;
            if TcpListener::bind(("127.0.0.1", port)).is_ok() {
                return Ok(port);
            }
        }
    }
    let listener = TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_come_from_below_the_ephemeral_range_and_are_bindable() {
        let high = ephemeral_start();
        for _ in 0..50 {
            let port = free_port().unwrap();
            if high > LOWEST + 1_000 {
                assert!((LOWEST..high).contains(&port), "{port}");
            }
            drop(TcpListener::bind(("127.0.0.1", port)).unwrap());
        }
    }
}
