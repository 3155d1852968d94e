//! What a [`Locker`](super::Locker) reports through the [`metrics`] facade (the
//! `metrics` feature): one set of labels per hold, worked out once at its acquire,
//! and the points where a hold begins, renews, is lost and ends. Without the
//! feature every function here is empty and no label is built.
//!
//! [`metrics`]: https://docs.rs/metrics
//!
//! # Examples
//!
//! The [`names`] to query, such as lost holds per backend (`lockkit::metrics::names`
//! with the facade's `metrics` feature):
//!
//! ```
//! use lockkit_core::metrics::names;
//!
//! let query = format!("sum by ({}) (rate({}[5m]))", names::BACKEND, names::LOST);
//! assert_eq!(query, "sum by (backend) (rate(lockkit_lost_total[5m]))");
//! assert_eq!(names::GRANTS, "lockkit_grants_total");
//! assert_eq!(names::DEFAULT_GROUP, "all"); // the `group` label unless one is set
//! ```

#[cfg(feature = "metrics")]
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::time::Instant;

use super::locker::Inner;
use crate::driver::LockMode;
use crate::error::{LockError, Result};
use crate::types::LockKey;

/// The names and labels lockkit records under. See "Metrics" in docs/operating.md.
pub mod names {
    /// Histogram, seconds from an acquire's call to its outcome; label `outcome`:
    /// `granted`, `contended`, `timeout` or `error`.
    pub const ACQUIRE_WAIT_SECONDS: &str = "lockkit_acquire_wait_seconds";
    /// Histogram, seconds from a grant to the end of the hold (released, dropped,
    /// or handed to a job's `at_least_for`).
    pub const HOLD_SECONDS: &str = "lockkit_hold_seconds";
    /// Counter: holds granted (a reentrant acquire is not a new grant).
    pub const GRANTS: &str = "lockkit_grants_total";
    /// Counter: acquires refused because the lock was held (`try_lock`,
    /// `no_wait`). A waiting acquire's wait is in the wait histogram instead.
    pub const CONTENDED: &str = "lockkit_contended_total";
    /// Counter: waiting acquires that timed out.
    pub const TIMEOUTS: &str = "lockkit_timeouts_total";
    /// Counter: holds lost while held (a renewal refused or too late, a session
    /// ended, a release that found the hold gone), once per hold.
    pub const LOST: &str = "lockkit_lost_total";
    /// Counter: renewals that kept a hold (the watchdog's and `extend`).
    pub const RENEWALS: &str = "lockkit_renewals_total";
    /// Counter: renewals that failed (the hold may still be retried, or lost).
    pub const RENEWAL_FAILURES: &str = "lockkit_renewal_failures_total";
    /// Gauge: holds granted and neither ended nor lost.
    pub const HELD: &str = "lockkit_held_locks";
    /// Counter: outages of a driver's wake-up channel (a PostgreSQL `LISTEN`
    /// connection, a Redis pub/sub connection), once each, however often the
    /// driver retries. Labelled `backend` only.
    pub const WAKE_UP_OUTAGES: &str = "lockkit_wake_up_outages_total";
    /// Gauge: wake-up channels down now, whose waiters poll (a Redlock driver
    /// has one per master). Labelled `backend` only.
    pub const WAKE_UP_CHANNELS_DOWN: &str = "lockkit_wake_up_channels_down";
    /// Counter: attempts an acquire made after its first, labelled `backend`
    /// (`unknown` for a request made without a `Locker`) and [`CAUSE`]: what a
    /// wait costs the server, and whether the backend's wake-ups or the fallback
    /// polls drive it.
    pub const WAIT_ATTEMPTS: &str = "lockkit_wait_attempts_total";
    /// Label of [`WAIT_ATTEMPTS`]: `woken` (the backend's wake-up ended the
    /// pause: a release notification, a watch event, or a blocking wait's answer,
    /// whatever it was: one that ran out its own time, such as MySQL's wait on a
    /// bell or Consul's blocking query, or a server that could not block), `polled`
    /// (the pause ran out first: no wake-up, a retry time, or the wait's
    /// deadline), or `retried` (after a transient failure, also of a `try_lock`).
    pub const CAUSE: &str = "cause";
    /// Label: the driver's name (`redis`, `postgres`, …).
    pub const BACKEND: &str = "backend";
    /// Label: `exclusive`, `shared` or `permit`.
    pub const MODE: &str = "mode";
    /// Label: the key's group, from [`Locker::with_metrics_group`](crate::Locker::with_metrics_group);
    /// `all` unless set. Never the key itself unless the application says so.
    pub const GROUP: &str = "group";
    /// The group of every key when no grouping is set.
    pub const DEFAULT_GROUP: &str = "all";
}

/// Registers every metric's unit and description with the installed recorder.
/// Call it once after installing one (an exporter shows them as `# HELP`).
#[cfg(feature = "metrics")]
pub fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_histogram!(
        names::ACQUIRE_WAIT_SECONDS,
        Unit::Seconds,
        "Time from an acquire's call to its outcome"
    );
    describe_histogram!(
        names::HOLD_SECONDS,
        Unit::Seconds,
        "Time from a grant to the end of the hold"
    );
    describe_counter!(names::GRANTS, "Holds granted");
    describe_counter!(
        names::CONTENDED,
        "Acquires refused because the lock was held"
    );
    describe_counter!(names::TIMEOUTS, "Waiting acquires that timed out");
    describe_counter!(names::LOST, "Holds lost while held");
    describe_counter!(names::RENEWALS, "Renewals that kept a hold");
    describe_counter!(names::RENEWAL_FAILURES, "Renewals that failed");
    describe_gauge!(names::HELD, "Holds granted and neither ended nor lost");
    describe_counter!(
        names::WAKE_UP_OUTAGES,
        "Outages of a driver's wake-up channel, once each"
    );
    describe_gauge!(
        names::WAKE_UP_CHANNELS_DOWN,
        "Wake-up channels down now (their waiters poll)"
    );
    describe_counter!(
        names::WAIT_ATTEMPTS,
        "Attempts of waiting acquires after their first, by cause"
    );
}

/// How a locker names a key's group.
#[cfg(feature = "metrics")]
pub(crate) type GroupFn = Arc<dyn Fn(&LockKey) -> String + Send + Sync>;

/// The labels of one acquire and its hold.
#[derive(Debug, Clone)]
pub(crate) struct Labels {
    #[cfg(feature = "metrics")]
    labels: Arc<[metrics::Label]>,
}

impl Labels {
    /// `backend` (the driver's name), `mode`, and the group `inner`'s grouping
    /// gives `key` (`all` without one).
    pub(crate) fn new(inner: &Inner, mode: LockMode, key: &LockKey) -> Self {
        #[cfg(not(feature = "metrics"))]
        let _ = (inner, mode, key);
        Self {
            #[cfg(feature = "metrics")]
            labels: build(inner, mode, key),
        }
    }

    fn count(&self, _name: &'static str) {
        #[cfg(feature = "metrics")]
        metrics::counter!(_name, self.labels.iter()).increment(1);
    }

    fn held(&self, _delta: f64) {
        #[cfg(feature = "metrics")]
        metrics::gauge!(names::HELD, self.labels.iter()).increment(_delta);
    }

    fn seconds(&self, _name: &'static str, _since: Instant, _outcome: Option<&'static str>) {
        #[cfg(feature = "metrics")]
        {
            let value = _since.elapsed().as_secs_f64();
            match _outcome {
                Some(outcome) => {
                    let mut labels = self.labels.to_vec();
                    labels.push(metrics::Label::from_static_parts("outcome", outcome));
                    metrics::histogram!(_name, labels).record(value);
                }
                None => metrics::histogram!(_name, self.labels.iter()).record(value),
            }
        }
    }

    /// Records an acquire that began at `started`, by its outcome.
    pub(crate) fn acquired<T>(&self, started: Instant, outcome: &Result<T>) {
        let outcome = match outcome {
            Ok(_) => {
                self.count(names::GRANTS);
                "granted"
            }
            Err(LockError::Contended { .. }) => {
                self.count(names::CONTENDED);
                "contended"
            }
            Err(LockError::Timeout { .. }) => {
                self.count(names::TIMEOUTS);
                "timeout"
            }
            Err(_) => "error",
        };
        self.seconds(names::ACQUIRE_WAIT_SECONDS, started, Some(outcome));
    }

    /// Records one renewal of a hold, kept or failed.
    pub(crate) fn renewal(&self, kept: bool) {
        self.count(if kept {
            names::RENEWALS
        } else {
            names::RENEWAL_FAILURES
        });
    }
}

#[cfg(feature = "metrics")]
fn build(inner: &Inner, mode: LockMode, key: &LockKey) -> Arc<[metrics::Label]> {
    let mode = match mode {
        LockMode::Exclusive => "exclusive",
        LockMode::Shared => "shared",
        LockMode::Permit { .. } => "permit",
    };
    let group = inner
        .metrics_group()
        .map_or_else(|| names::DEFAULT_GROUP.to_owned(), |f| f(key));
    Arc::new([
        metrics::Label::from_static_parts(names::BACKEND, inner.driver.name()),
        metrics::Label::from_static_parts(names::MODE, mode),
        metrics::Label::new(names::GROUP, group),
    ])
}

/// One hold's part in the metrics: counted in the gauge from its start until it
/// ends or is lost, and lost at most once.
#[derive(Debug)]
pub(crate) struct HoldMeter {
    pub(crate) labels: Labels,
    granted_at: Instant,
    in_gauge: AtomicBool,
    lost: AtomicBool,
}

impl HoldMeter {
    pub(crate) fn new(labels: Labels) -> Self {
        Self {
            labels,
            granted_at: Instant::now(),
            in_gauge: AtomicBool::new(false),
            lost: AtomicBool::new(false),
        }
    }

    /// The hold is registered: it counts as held.
    pub(crate) fn started(&self) {
        if !self.in_gauge.swap(true, Ordering::AcqRel) {
            self.labels.held(1.0);
        }
    }

    fn leave_gauge(&self) {
        if self.in_gauge.swap(false, Ordering::AcqRel) {
            self.labels.held(-1.0);
        }
    }

    /// The hold was found lost: counted once, and no longer held.
    pub(crate) fn lost(&self) {
        if !self.lost.swap(true, Ordering::AcqRel) {
            self.labels.count(names::LOST);
        }
        self.leave_gauge();
    }

    /// The hold ended (`lost`: found lost by then).
    pub(crate) fn ended(&self, lost: bool) {
        if lost {
            self.lost();
        }
        self.leave_gauge();
        self.labels
            .seconds(names::HOLD_SECONDS, self.granted_at, None);
    }
}
