//! `?wait_replicas=N&wait_timeout_ms=T` (Redisson's `syncSlaves`): after a grant,
//! and after each renewal, `WAIT N T`, in one pipeline with the script that wrote
//! it (see [`Call`](crate::call::Call)), so on the same connection to the same
//! node. A grant
//! fewer than N replicas acknowledged is released, and the acquire fails with
//! a transient error (a waiting acquire tries again within its wait); a renewal
//! they did not acknowledge fails, and the watchdog tries again until the lease
//! ends.
//!
//! This narrows the failover window (invariant R5), it does not close it: `WAIT`
//! does not make Redis replication synchronous, a replica that acknowledged can
//! still lose the write, and the sentinels may promote a replica that did not
//! acknowledge.

use std::time::Duration;

use lockkit_core::LockError;
use lockkit_core::url::Query;
use redis::{Cmd, ErrorKind, RedisError, RedisResult, ServerErrorKind};

/// How long `WAIT` waits for the replicas by default.
const DEFAULT_WAIT_TIMEOUT: Duration = Duration::from_millis(500);

/// How many replicas must acknowledge each grant and renewal, within how long
/// (`?wait_replicas=N&wait_timeout_ms=T`, Redisson's `syncSlaves`; on `redis://`,
/// Sentinel and Cluster URLs).
///
/// After every grant and renewal the driver sends `WAIT N T`, in one pipeline
/// with the script that wrote it (`WAIT` counts what its own connection wrote, so
/// it must reach the same node on the same connection; on a Cluster, the lock's
/// master). A grant fewer than N replicas acknowledged within `wait_timeout_ms`
/// (default 500) is released, and the acquire fails with a transient error, which
/// a waiting acquire retries; an unacknowledged renewal fails, and the watchdog
/// retries until the lease ends.
///
/// It narrows the failover window of invariant R5, it does not close it: `WAIT`
/// does not make replication synchronous, and the sentinels (or the Cluster's
/// vote) may promote a replica that did not acknowledge. It also needs N
/// replicas *after* a failover: a Cluster master with one replica has none once
/// it is promoted, and every grant in its slots is refused until a replica joins.
/// While replicas lag, a `WAIT` holds its connection for up to `wait_timeout_ms`,
/// and the driver's other commands on that connection queue behind it; with the
/// replicas in sync it rides in the script's round trip.
///
/// # Which setting gives which guarantee at a failover
///
/// Replication is asynchronous: a master that dies before its replicas received
/// a grant takes the grant, and its counter bump, with it. RELIABILITY.md shows
/// each case from a recorded history (*master failed over while a lock is held*,
/// with the replicas in sync, and *before replicating a grant*, with them cut
/// off):
///
/// | setting | the lock after a failover to a lagging replica | tokens | a fenced resource |
/// |---|---|---|---|
/// | default | can be granted again while its holder still believes it holds (until its next renewal finds nothing) | can repeat: the promoted counter is behind | accepts a token equal to the highest it saw, so it can take the older holder's write |
/// | `fence_seed=clock` ([`FenceSeed::Clock`](crate::FenceSeed::Clock)) | as the default | keep rising (above the server's clock) | refuses the older holder |
/// | `wait_replicas=N` | a grant counts only once N replicas acknowledged it: lost only if the promoted replica is not one that acknowledged | as the default, for what was not acknowledged | as the default |
/// | `wait_replicas=N` + `fence_seed=clock` | as `wait_replicas` | keep rising | refuses the older holder |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaAck {
    /// `wait_replicas=N`.
    pub replicas: u32,
    /// `wait_timeout_ms=T` (default 500).
    pub timeout: Duration,
}

/// `wait_replicas=N` (1 to 16) and `wait_timeout_ms=T` (1 to 60000; only with
/// `wait_replicas`).
pub(crate) fn take_replica_ack(query: &mut Query) -> Result<Option<ReplicaAck>, LockError> {
    let replicas = match query.take("wait_replicas")? {
        None => None,
        Some(n) => match n.parse::<u32>() {
            Ok(n @ 1..=16) => Some(n),
            _ => return Err(query.invalid("`wait_replicas` is a number of replicas, 1 to 16")),
        },
    };
    let timeout = query.take_millis("wait_timeout_ms", 1..=60_000)?;
    match (replicas, timeout) {
        (None, Some(_)) => Err(query.invalid("`wait_timeout_ms` needs `wait_replicas`")),
        (None, None) => Ok(None),
        (Some(replicas), timeout) => Ok(Some(ReplicaAck {
            replicas,
            timeout: timeout.unwrap_or(DEFAULT_WAIT_TIMEOUT),
        })),
    }
}

impl ReplicaAck {
    /// `WAIT N T`.
    pub(crate) fn command(&self) -> Cmd {
        let mut wait = redis::cmd("WAIT");
        wait.arg(self.replicas).arg(self.timeout_ms());
        wait
    }

    fn timeout_ms(&self) -> u64 {
        u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX)
    }

    /// Whether `acked` replicas (`WAIT`'s answer) are enough.
    ///
    /// # Errors
    ///
    /// A transient error (`TRYAGAIN`) naming how many replicas acknowledged, if
    /// fewer than asked did within the timeout.
    pub(crate) fn check(&self, acked: i64) -> RedisResult<()> {
        if acked >= i64::from(self.replicas) {
            return Ok(());
        }
        Err(RedisError::from((
            ErrorKind::Server(ServerErrorKind::TryAgain),
            "too few replicas acknowledged the write (wait_replicas)",
            format!(
                "{acked} of {} within {} ms (wait_timeout_ms)",
                self.replicas,
                self.timeout_ms()
            ),
        )))
    }
}
