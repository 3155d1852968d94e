//! Whether a driver's wake-up channel is up: a PostgreSQL `LISTEN` connection, a
//! Redis pub/sub subscription. While it is down, waiters fall back to polling, so
//! a hand-off that took a round trip takes up to a poll pause, and a wait may run
//! out where it would have been granted. [`WakeUpHealth`] says so once when the
//! channel goes down (`warn`) and once when it is back (`info`), so that slower
//! hand-offs and the timeouts of that time have a cause in the log; with the
//! `metrics` feature it also counts the outage
//! ([`names::WAKE_UP_OUTAGES`](crate::metrics::names::WAKE_UP_OUTAGES)) and keeps
//! the channel in [`names::WAKE_UP_CHANNELS_DOWN`](crate::metrics::names::WAKE_UP_CHANNELS_DOWN)
//! until it is back or the driver is gone.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::url::redact_urls_in;

/// The health of one wake-up channel, as the task that reads it sees it.
///
/// # Examples
///
/// ```
/// use lockkit_core::driver::WakeUpHealth;
///
/// let health = WakeUpHealth::new("postgres", "LISTEN connection");
/// assert!(!health.is_down());
/// health.down(&"connection refused"); // logs a warning
/// health.down(&"connection refused"); // already down: logs nothing
/// assert!(health.is_down());
/// health.up(); // logs that it is back
/// assert!(!health.is_down());
/// ```
#[derive(Debug)]
pub struct WakeUpHealth {
    driver: &'static str,
    channel: String,
    down: AtomicBool,
}

impl WakeUpHealth {
    /// A channel that is up; `channel` names it in the log (`"LISTEN
    /// connection"`), without a password.
    pub fn new(driver: &'static str, channel: impl Into<String>) -> Self {
        Self {
            driver,
            channel: channel.into(),
            down: AtomicBool::new(false),
        }
    }

    /// The channel failed with `error`: a warning and an outage counted, unless
    /// it was down already (one per outage, however often the reader retries). A
    /// URL in `error` is shown without its password.
    pub fn down(&self, error: &dyn std::fmt::Display) {
        if !self.down.swap(true, Ordering::AcqRel) {
            self.record(1.0);
            let error = redact_urls_in(&error.to_string());
            tracing::warn!(
                driver = self.driver,
                %error,
                "wake-ups lost: the {} is down; waiters poll until it is back",
                self.channel
            );
        }
    }

    /// The channel is up: after an outage, says that it is back.
    pub fn up(&self) {
        if self.down.swap(false, Ordering::AcqRel) {
            self.record(-1.0);
            tracing::info!(
                driver = self.driver,
                "wake-ups back: the {} is up again",
                self.channel
            );
        }
    }

    /// Whether the channel is down (waiters poll meanwhile).
    pub fn is_down(&self) -> bool {
        self.down.load(Ordering::Acquire)
    }

    /// The metrics of a channel going down (`+1`: an outage counted, one more
    /// channel down) or coming back (`-1`).
    fn record(&self, _change: f64) {
        #[cfg(feature = "metrics")]
        {
            use crate::metrics::names;
            let labels = [metrics::Label::from_static_parts(
                names::BACKEND,
                self.driver,
            )];
            if _change > 0.0 {
                metrics::counter!(names::WAKE_UP_OUTAGES, labels.iter()).increment(1);
            }
            metrics::gauge!(names::WAKE_UP_CHANNELS_DOWN, labels.iter()).increment(_change);
        }
    }
}

impl Drop for WakeUpHealth {
    /// A channel that goes away while down (its driver dropped) no longer counts
    /// as down.
    fn drop(&mut self) {
        if *self.down.get_mut() {
            self.record(-1.0);
        }
    }
}
