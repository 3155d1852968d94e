//! Free ports on 127.0.0.1 for the servers the testkit starts.
//!
//! A port is chosen some time before the server binds it. If it came from the
//! kernel's ephemeral range (what `bind(0)` hands out), an outgoing connection of
//! any test — hundreds a second in a full run — can take it as its local port in
//! between, and the server fails with "Address already in use". So ports are drawn
//! at random from *below* the ephemeral range, which the kernel never assigns on its
//! own, and checked by binding them.
//!
//! Test processes run in parallel, and each server takes a moment to bind the port
//! it was given: two processes drawing the same port in that window would both
//! pass the bind check. So a drawn port is also *reserved*, across processes, by
//! creating `<tmp>/lockkit-ports/<port>` exclusively; a reservation is honoured for
//! ten minutes, far longer than any server takes to start.

use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

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

/// How long a reservation keeps other test processes off a port.
const RESERVED_FOR: Duration = Duration::from_secs(600);

fn reservations() -> PathBuf {
    std::env::temp_dir().join("lockkit-ports")
}

/// Reserves `port` for this process; false if another process holds a fresh
/// reservation for it.
fn reserve(port: u16) -> bool {
    let dir = reservations();
    if std::fs::create_dir_all(&dir).is_err() {
        // No reservations possible: fall back to the bind check alone.
        return true;
    }
    let path = dir.join(port.to_string());
    let create = || {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .is_ok()
    };
    if create() {
        return true;
    }
    let stale = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age > RESERVED_FOR);
    stale && std::fs::remove_file(&path).is_ok() && create()
}

/// A port on 127.0.0.1 that was free a moment ago and is reserved against other
/// test processes, outside the ephemeral range where possible (see the module
/// docs); `bind(0)` as the last resort.
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
            if TcpListener::bind(("127.0.0.1", port)).is_ok() && reserve(port) {
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

    #[test]
    fn a_reserved_port_is_not_handed_out_again() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..200 {
            let port = free_port().unwrap();
            assert!(seen.insert(port), "port {port} handed out twice");
            assert!(!reserve(port), "port {port} could be reserved again");
        }
    }
}
