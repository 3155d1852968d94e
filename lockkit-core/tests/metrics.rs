//! The metrics a `Locker` records (the `metrics` feature), read back through a
//! recorder after a scripted workload on the mem driver: every count exact.
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::driver::WakeUpHealth;
use lockkit_core::mem::MemDriver;
use lockkit_core::metrics::names;
use lockkit_core::{LockError, LockKey, Locker};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

/// A metric's name, its labels, and its value.
type Metric = (String, Vec<(String, String)>, DebugValue);

/// What the recorder holds (`backend` is always `mem`).
struct Seen(Vec<Metric>);

impl Seen {
    fn take(snapshotter: &Snapshotter) -> Self {
        Self(
            snapshotter
                .snapshot()
                .into_vec()
                .into_iter()
                .map(|(key, _, _, value)| {
                    let key = key.key();
                    let labels = key
                        .labels()
                        .map(|l| (l.key().to_owned(), l.value().to_owned()))
                        .collect();
                    (key.name().to_owned(), labels, value)
                })
                .collect(),
        )
    }

    fn find(&self, name: &str, labels: &[(&str, &str)]) -> Option<&DebugValue> {
        self.0
            .iter()
            .find(|(n, ls, _)| {
                n == name
                    && ls.len() == labels.len() + 1
                    && ls.iter().any(|(k, v)| k == "backend" && v == "mem")
                    && labels
                        .iter()
                        .all(|(k, v)| ls.iter().any(|(lk, lv)| lk == k && lv == v))
            })
            .map(|(_, _, v)| v)
    }

    fn counter(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        match self.find(name, labels) {
            Some(DebugValue::Counter(n)) => *n,
            None => 0,
            other => panic!("{name} {labels:?} is not a counter: {other:?}"),
        }
    }

    fn gauge(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        match self.find(name, labels) {
            Some(DebugValue::Gauge(v)) => v.into_inner(),
            other => panic!("{name} {labels:?} is not a gauge: {other:?}"),
        }
    }

    fn histogram(&self, name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
        match self.find(name, labels) {
            Some(DebugValue::Histogram(v)) => v.iter().map(|x| x.into_inner()).collect(),
            None => Vec::new(),
            other => panic!("{name} {labels:?} is not a histogram: {other:?}"),
        }
    }
}

/// Runs `work` on a runtime of its own (every task on this thread) with a
/// recorder of its own: what `work` returns, given the recorder's snapshotter.
fn recorded<T, F: Future<Output = T>>(work: impl FnOnce(Snapshotter) -> F) -> T {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || runtime.block_on(work(snapshotter)))
}

/// The workload: two exclusive holds of `inventory:*` (one released, one lost), a
/// refused try and a timed-out wait on it, an extend that kept a hold and one that
/// failed; two readers of `report:x` and a permit of `jobs:x`, still held.
async fn workload(locker: &Locker) -> Vec<lockkit_core::LockGuard> {
    let first = locker.lock("inventory:1").await.unwrap();
    assert!(matches!(
        locker.try_lock("inventory:1").await,
        Err(LockError::Contended { .. })
    ));
    assert!(matches!(
        locker
            .lock("inventory:1")
            .wait(Duration::from_millis(20))
            .await,
        Err(LockError::Timeout { .. })
    ));
    first.extend(Duration::from_secs(5)).await.unwrap();
    first.release().await.unwrap();

    let second = locker.lock("inventory:2").await.unwrap();
    let key: LockKey = "inventory:2".parse().unwrap();
    locker.driver().force_release(&key).await.unwrap();
    assert!(
        second
            .extend(Duration::from_secs(5))
            .await
            .unwrap_err()
            .is_lost()
    );
    drop(second);

    vec![
        locker.read_lock("report:x").await.unwrap(),
        locker.read_lock("report:x").await.unwrap(),
        locker.semaphore("jobs:x", 2).acquire().await.unwrap(),
    ]
}

#[test]
fn a_scripted_workload_is_counted_exactly_by_key_group() {
    let seen = recorded(|snapshotter| async move {
        let locker = Locker::new(Arc::new(MemDriver::new())).with_metrics_group(|key| {
            key.as_str()
                .split(':')
                .next()
                .unwrap_or_default()
                .to_owned()
        });
        let held = workload(&locker).await;
        let seen = Seen::take(&snapshotter);
        drop(held);
        seen
    });

    let inventory = [("mode", "exclusive"), ("group", "inventory")];
    let report = [("mode", "shared"), ("group", "report")];
    let jobs = [("mode", "permit"), ("group", "jobs")];
    assert_eq!(seen.counter(names::GRANTS, &inventory), 2);
    assert_eq!(seen.counter(names::GRANTS, &report), 2);
    assert_eq!(seen.counter(names::GRANTS, &jobs), 1);
    assert_eq!(seen.counter(names::CONTENDED, &inventory), 1);
    assert_eq!(seen.counter(names::TIMEOUTS, &inventory), 1);
    assert_eq!(seen.counter(names::RENEWALS, &inventory), 1);
    assert_eq!(seen.counter(names::RENEWAL_FAILURES, &inventory), 1);
    assert_eq!(seen.counter(names::LOST, &inventory), 1);
    assert_eq!(seen.counter(names::LOST, &report), 0);

    assert_eq!(seen.gauge(names::HELD, &inventory), 0.0);
    assert_eq!(seen.gauge(names::HELD, &report), 2.0);
    assert_eq!(seen.gauge(names::HELD, &jobs), 1.0);

    let waited = |outcome| {
        let mut labels = inventory.to_vec();
        labels.push(("outcome", outcome));
        seen.histogram(names::ACQUIRE_WAIT_SECONDS, &labels)
    };
    assert_eq!(waited("granted").len(), 2);
    assert_eq!(waited("contended").len(), 1);
    let timed_out = waited("timeout");
    assert_eq!(timed_out.len(), 1);
    assert!(timed_out[0] >= 0.020, "the timed-out wait: {timed_out:?}");
    assert_eq!(seen.histogram(names::HOLD_SECONDS, &inventory).len(), 2);
    assert!(seen.histogram(names::HOLD_SECONDS, &report).is_empty());

    // The key itself is never a label.
    assert!(
        !seen
            .0
            .iter()
            .any(|(_, labels, _)| labels.iter().any(|(_, v)| v.contains(':'))),
        "a raw key in the labels"
    );
}

#[test]
fn without_a_grouping_every_key_is_in_the_group_all() {
    let seen = recorded(|snapshotter| async move {
        let locker = Locker::new(Arc::new(MemDriver::new()));
        for key in ["a", "b", "c"] {
            locker.lock(key).await.unwrap().release().await.unwrap();
        }
        Seen::take(&snapshotter)
    });
    let all = [("mode", "exclusive"), ("group", names::DEFAULT_GROUP)];
    assert_eq!(seen.counter(names::GRANTS, &all), 3);
    assert_eq!(seen.gauge(names::HELD, &all), 0.0);
}

/// A wake-up channel's outages are counted once each, however often its reader
/// fails meanwhile, and the gauge shows the channels down now: back to 0 when a
/// channel returns or its driver goes while it is down.
#[test]
fn wake_up_outages_are_counted_once_and_down_channels_gauged() {
    let channels = || {
        (
            WakeUpHealth::new("mem", "pub/sub connection"),
            WakeUpHealth::new("mem", "pub/sub connection to master b"),
        )
    };
    let both_down = recorded(|snapshotter| async move {
        let (first, second) = channels();
        first.down(&"connection refused");
        first.down(&"connection refused");
        second.down(&"connection reset");
        Seen::take(&snapshotter)
    });
    assert_eq!(both_down.counter(names::WAKE_UP_OUTAGES, &[]), 2);
    assert_eq!(both_down.gauge(names::WAKE_UP_CHANNELS_DOWN, &[]), 2.0);

    let all_back = recorded(|snapshotter| async move {
        let (first, second) = channels();
        first.down(&"connection refused");
        second.down(&"connection reset");
        first.up();
        first.down(&"connection refused");
        first.up();
        drop(second);
        Seen::take(&snapshotter)
    });
    assert_eq!(all_back.counter(names::WAKE_UP_OUTAGES, &[]), 3);
    assert_eq!(all_back.gauge(names::WAKE_UP_CHANNELS_DOWN, &[]), 0.0);
}

/// A wait's attempts after its first are counted by cause: the attempt a release
/// wakes is `woken`; a wait that no release ends makes its last look at its
/// deadline, `polled`. No attempt is counted for an acquire that did not wait.
#[test]
fn a_waits_attempts_are_counted_by_cause() {
    let seen = recorded(|snapshotter| async move {
        let locker = Locker::new(Arc::new(MemDriver::new()));
        let key: LockKey = "k".parse().unwrap();
        let held = locker.lock("k").await.unwrap();
        let timed_out = locker.lock("k").wait(Duration::from_millis(30)).await;
        assert!(matches!(timed_out, Err(LockError::Timeout { .. })));
        let after_timeout = Seen::take(&snapshotter);

        let waiter = locker.clone();
        let waiting =
            tokio::spawn(async move { waiter.lock("k").wait(Duration::from_secs(10)).await });
        let driver = locker.driver().clone();
        lockkit_conformance::until("one waiter queued", Duration::from_secs(5), || async {
            driver.inspect(&key).await.unwrap().waiters == Some(1)
        })
        .await
        .unwrap();
        held.release().await.unwrap();
        waiting.await.unwrap().unwrap().release().await.unwrap();
        (after_timeout, Seen::take(&snapshotter))
    });
    let (after_timeout, after_release) = seen;
    let woken = [(names::CAUSE, "woken")];
    let polled = [(names::CAUSE, "polled")];
    assert_eq!(after_timeout.counter(names::WAIT_ATTEMPTS, &woken), 0);
    assert!(after_timeout.counter(names::WAIT_ATTEMPTS, &polled) >= 1);
    assert_eq!(after_release.counter(names::WAIT_ATTEMPTS, &woken), 1);
}
