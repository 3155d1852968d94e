//! Leases: one per distinct whole-second TTL per driver, shared by every entry of
//! that driver with that TTL, renewed by one keep-alive round for all of them.
//!
//! Each lease keeps one `LeaseKeepAlive` stream, driven by hand: a round sends one
//! request and reads one answer. Rounds are coalesced: a caller that needs the
//! lease confirmed "since T" reuses any round sent at or after T.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use etcd_client::{Client, LeaseKeepAliveStream, LeaseKeeper};
use lockkit_core::LockError;
use lockkit_core::sync::lock;
use tokio::time::Instant;

use super::error::{connection, etcd_error, is_lease_not_found};
use super::request::within;

/// The longest a keep-alive round may take before it counts as failed.
pub(crate) fn round_limit(ttl: Duration) -> Duration {
    (ttl / 4).clamp(Duration::from_millis(200), Duration::from_secs(2))
}

/// One etcd lease.
#[derive(Debug)]
pub(crate) struct Lease {
    /// The lease id.
    pub(crate) id: i64,
    /// The TTL the server granted.
    pub(crate) ttl: Duration,
    state: Mutex<State>,
    stream: tokio::sync::Mutex<Option<(LeaseKeeper, LeaseKeepAliveStream)>>,
}

#[derive(Debug)]
struct State {
    /// When the last round the server answered with TTL > 0 was sent: the lease
    /// lives at least until `confirmed + ttl` (invariant E4).
    confirmed: Instant,
    /// The server said the lease is gone.
    dead: bool,
}

impl Lease {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// The earliest the server may expire this lease, as far as we know.
    pub(crate) fn alive_until(&self) -> Instant {
        let st = self.state();
        st.confirmed + self.ttl
    }

    /// Whether the server said the lease is gone.
    pub(crate) fn is_dead(&self) -> bool {
        self.state().dead
    }

    pub(crate) fn mark_dead(&self) {
        self.state().dead = true;
    }

    /// Makes sure a keep-alive round sent at or after `since` was answered, and
    /// returns when that round was sent.
    ///
    /// # Errors
    ///
    /// [`LockError::Lost`] when the server says the lease is gone; a retryable
    /// error when the round failed or timed out.
    pub(crate) async fn confirm(
        &self,
        client: &Client,
        since: Instant,
        rounds: &AtomicU64,
    ) -> Result<Instant, LockError> {
        if let Some(at) = self.confirmed_since(since)? {
            return Ok(at);
        }
        let mut stream = self.stream.lock().await;
        if let Some(at) = self.confirmed_since(since)? {
            return Ok(at);
        }
        let sent = Instant::now();
        rounds.fetch_add(1, Ordering::Relaxed);
        let limit = round_limit(self.ttl);
        let answer = match stream.as_mut() {
            Some((keeper, responses)) => within(limit, "lease keep-alive", async {
                keeper.keep_alive().await?;
                responses.message().await
            })
            .await
            .map(|r| r.map(|r| r.ttl())),
            None => {
                let mut leases = client.lease_client();
                // Opening the stream sends the first request and reads its answer.
                match tokio::time::timeout(limit, leases.keep_alive(self.id)).await {
                    Ok(Ok(pair)) => {
                        *stream = Some(pair);
                        Ok(Some(self.ttl.as_secs() as i64))
                    }
                    Ok(Err(e)) if is_lease_not_found(&e) => Ok(Some(0)),
                    Ok(Err(e)) => Err(etcd_error(e)),
                    Err(_) => Err(connection(format!(
                        "lease keep-alive: no answer within {limit:?}"
                    ))),
                }
            }
        };
        match answer {
            Ok(Some(ttl)) if ttl > 0 => {
                let mut st = self.state();
                st.confirmed = st.confirmed.max(sent);
                Ok(sent)
            }
            Ok(Some(_)) => {
                self.mark_dead();
                *stream = None;
                Err(self.lost())
            }
            Ok(None) | Err(_) => {
                // A broken stream is reopened by the next round.
                *stream = None;
                Err(answer
                    .err()
                    .unwrap_or_else(|| connection("the lease keep-alive stream closed")))
            }
        }
    }

    fn confirmed_since(&self, since: Instant) -> Result<Option<Instant>, LockError> {
        let st = self.state();
        if st.dead {
            return Err(self.lost());
        }
        Ok((st.confirmed >= since).then_some(st.confirmed))
    }

    fn lost(&self) -> LockError {
        LockError::lost(
            format!("lease {:x}", self.id),
            "the etcd lease expired (keep-alive answered TTL 0)",
        )
    }
}

/// A driver's leases, by TTL in whole seconds.
#[derive(Debug, Default)]
pub(crate) struct Leases {
    by_ttl: Mutex<HashMap<u64, Arc<Lease>>>,
    granting: tokio::sync::Mutex<()>,
    /// Keep-alive rounds sent, for tests and benchmarks.
    pub(crate) rounds: AtomicU64,
}

/// A TTL rounded up to whole seconds (etcd's lease granularity), at least 1 s.
pub(crate) fn whole_seconds(ttl: Duration) -> u64 {
    let s = ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0);
    s.max(1)
}

impl Leases {
    fn current(&self, secs: u64) -> Option<Arc<Lease>> {
        let map = lock(&self.by_ttl);
        map.get(&secs).filter(|l| !l.is_dead()).cloned()
    }

    /// The live lease for `ttl`, granting one if there is none (or the last one is
    /// dead or may have expired).
    ///
    /// # Errors
    ///
    /// A retryable error when the grant fails.
    pub(crate) async fn for_ttl(
        &self,
        client: &Client,
        ttl: Duration,
    ) -> Result<Arc<Lease>, LockError> {
        let secs = whole_seconds(ttl);
        let usable = |l: &Arc<Lease>| l.alive_until() > Instant::now() + Duration::from_millis(50);
        if let Some(lease) = self.current(secs).filter(usable) {
            return Ok(lease);
        }
        let _granting = self.granting.lock().await;
        if let Some(lease) = self.current(secs).filter(usable) {
            return Ok(lease);
        }
        let sent = Instant::now();
        let mut leases = client.lease_client();
        let granted = within(
            round_limit(Duration::from_secs(secs * 4)),
            "lease grant",
            leases.grant(secs as i64, None),
        )
        .await?;
        let lease = Arc::new(Lease {
            id: granted.id(),
            ttl: Duration::from_secs(u64::try_from(granted.ttl()).unwrap_or(secs)),
            state: Mutex::new(State {
                confirmed: sent,
                dead: false,
            }),
            stream: tokio::sync::Mutex::new(None),
        });
        if lease.ttl > Duration::from_secs(secs) {
            tracing::debug!(
                lease = lease.id,
                asked_s = secs,
                granted_s = lease.ttl.as_secs(),
                "etcd raised the lease to its minimum (1.5 × its election timeout)"
            );
        } else {
            tracing::debug!(lease = lease.id, ttl_s = secs, "granted a lease");
        }
        lock(&self.by_ttl).insert(secs, lease.clone());
        Ok(lease)
    }

    /// Forgets `lease` (the server lost it); the next acquire grants a new one.
    pub(crate) fn forget(&self, lease: &Lease) {
        lease.mark_dead();
        let mut map = lock(&self.by_ttl);
        map.retain(|_, l| l.id != lease.id);
    }

    /// Every lease this driver currently uses (one per distinct TTL in whole
    /// seconds of its holds and waiters).
    #[cfg(test)]
    pub(crate) fn ids(&self) -> Vec<i64> {
        let map = lock(&self.by_ttl);
        map.values().map(|l| l.id).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_round_up_to_whole_seconds() {
        assert_eq!(whole_seconds(Duration::from_millis(10)), 1);
        assert_eq!(whole_seconds(Duration::from_millis(1000)), 1);
        assert_eq!(whole_seconds(Duration::from_millis(1001)), 2);
        assert_eq!(whole_seconds(Duration::from_secs(30)), 30);
    }
}
