//! Sessions: what one is (its behavior, TTL and lock-delay), how a create request
//! describes one, its ID and when its TTL timer fires.

use std::time::{Duration, Instant};

/// The node every session belongs to: the stand-in is a one-node cluster.
pub(crate) const NODE: &str = "lockkit-standin";
/// The one node health check, always passing (Consul's `serfHealth`).
pub(crate) const SERF_HEALTH: &str = "serfHealth";

/// What happens to a session's locks when it is invalidated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Behavior {
    /// The locks are released: `Session` cleared, value kept.
    Release,
    /// The locked keys are deleted.
    Delete,
}

impl Behavior {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Behavior::Release => "release",
            Behavior::Delete => "delete",
        }
    }
}

/// One session.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) lock_delay_ns: i64,
    pub(crate) behavior: Behavior,
    /// The TTL as the client wrote it ("" for none).
    pub(crate) ttl: String,
    /// The TTL, already multiplied by the stand-in's `ttl_scale`; `None`: no TTL.
    pub(crate) scaled_ttl: Option<Duration>,
    pub(crate) node_checks: Vec<String>,
    pub(crate) create_index: u64,
    pub(crate) modify_index: u64,
    /// When the TTL timer invalidates it.
    pub(crate) expires: Option<Instant>,
}

/// A session as `/v1/session/create` describes it, validated by the HTTP layer.
#[derive(Debug)]
pub(crate) struct SessionSpec {
    pub(crate) name: String,
    pub(crate) lock_delay_ns: i64,
    pub(crate) behavior: Behavior,
    pub(crate) ttl: String,
    pub(crate) ttl_ns: i64,
    pub(crate) node_checks: Vec<String>,
}

/// When a session renewed at `now` is invalidated: after its TTL times a factor
/// drawn uniformly from [1, 2] at every renewal. Consul's leader arms a timer of
/// exactly 2×TTL and documents only "between TTL and 2×TTL"; drawing the factor
/// makes a client that counts on either end fail some of the time.
pub(super) fn deadline(scaled_ttl: Option<Duration>, now: Instant) -> Option<Instant> {
    scaled_ttl.map(|ttl| now + ttl.mul_f64(1.0 + fastrand::f64()))
}

/// A random (version 4) UUID, as Consul's session IDs are.
pub(super) fn new_uuid() -> String {
    let mut b = fastrand::u128(..).to_be_bytes();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_look_like_uuids() {
        let u = new_uuid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert_eq!(u.matches('-').count(), 4);
    }
}
