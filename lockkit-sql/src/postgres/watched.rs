//! Observers' interest in releases. A release notifies only while its key's
//! `wake_until` is live ([`super::waiter_sql::push_wake`]), so an observer
//! pushes it out before each reading of the key
//! ([`crate::lease::LeaseBackend::watching`]). Observers read again after every
//! change and every interval (100 ms by default), so a push lasts
//! [`WATCH_TTL`] and the next is sent only once half of it has gone: a
//! driver's observers of a key cost about one statement a half-minute.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use lockkit_core::sync::lock;
use tokio::time::Instant;

/// How long an observer's push keeps the key's releases notified. A reading
/// is followed by at least half of it: an observer whose interval is longer
/// than that may learn of a later release only at its next reading.
pub(super) const WATCH_TTL: Duration = Duration::from_secs(60);

/// Sweep the lapsed entries once there are this many, at the least.
const SWEEP_FLOOR: usize = 1024;

/// Until when this driver last pushed each key's `wake_until` out.
#[derive(Debug, Default)]
pub(super) struct Watched {
    until: Mutex<Until>,
}

#[derive(Debug, Default)]
struct Until {
    by_key: HashMap<String, Instant>,
    /// Sweep the lapsed entries once there are this many: twice what the
    /// last sweep left, so that sweeps stay rare however many keys are live.
    sweep_at: usize,
}

impl Watched {
    /// Whether `key` needs a push now: none yet, or half of the last has gone.
    pub(super) fn due(&self, key: &str) -> bool {
        let until = lock(&self.until).by_key.get(key).copied();
        until.is_none_or(|until| until.saturating_duration_since(Instant::now()) < WATCH_TTL / 2)
    }

    /// Records a push of `key` sent at `sent`.
    pub(super) fn pushed(&self, key: &str, sent: Instant) {
        let mut until = lock(&self.until);
        if until.by_key.len() >= until.sweep_at.max(SWEEP_FLOOR) {
            let now = Instant::now();
            until.by_key.retain(|_, at| *at > now);
            until.sweep_at = until.by_key.len() * 2;
        }
        until.by_key.insert(key.to_owned(), sent + WATCH_TTL);
    }

    /// Forgets `key`: its row was deleted, and its `wake_until` with it.
    pub(super) fn forget(&self, key: &str) {
        lock(&self.until).by_key.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_key_is_pushed_again_once_half_the_last_push_has_gone() {
        let watched = Watched::default();
        assert!(watched.due("k"), "never pushed");
        watched.pushed("k", Instant::now());
        assert!(!watched.due("k"));
        tokio::time::advance(WATCH_TTL / 2 - Duration::from_millis(1)).await;
        assert!(!watched.due("k"));
        tokio::time::advance(Duration::from_millis(2)).await;
        assert!(watched.due("k"));
        watched.pushed("k", Instant::now());
        watched.forget("k");
        assert!(watched.due("k"), "a purged key's push went with its row");
    }
}
