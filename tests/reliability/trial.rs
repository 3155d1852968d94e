//! One backend under one fault: the workers, the recorded history, the verdict, and
//! the row written for RELIABILITY.md.

use super::*;

/// What the README promises for a backend under a fault.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Promise {
    /// No stale write accepted, tokens strictly increasing, no overlapping holds.
    Safe,
    /// A documented weakness: the test records what happens and asserts the part
    /// the README describes.
    Documented(&'static str),
}

/// One backend under one fault: the history being recorded and the workers.
pub(crate) struct Trial {
    pub(crate) backend: &'static str,
    pub(crate) fault: &'static str,
    pub(crate) key: String,
    pub(crate) primitive: Primitive,
    /// How many workers contend ([`CLIENTS`], more for a semaphore).
    pub(crate) workers: usize,
    /// The workers' lease ([`TTL`] unless a row needs a longer one).
    pub(crate) ttl: Duration,
    pub(crate) hold: Duration,
    pub(crate) recorder: Recorder,
    pub(crate) resource: FencedResource,
    /// The outside holder takes a fixed lease instead of the watchdog's.
    pub(crate) holder_fixed: bool,
}

impl Trial {
    pub(crate) fn new(backend: &'static str, fault: &'static str) -> Self {
        let recorder = Recorder::new();
        Self {
            backend,
            fault,
            key: format!("reliability/{}", fault.replace(' ', "-")),
            primitive: Primitive::Lock,
            workers: CLIENTS,
            ttl: TTL,
            hold: history::DEFAULT_HOLD,
            resource: FencedResource::new(recorder.clone()),
            recorder,
            holder_fixed: false,
        }
    }

    /// The outside holder holds a fixed lease of the TTL, with no renewals.
    pub(crate) fn fixed_holder_lease(mut self) -> Self {
        self.holder_fixed = true;
        self
    }

    /// The same trial on a semaphore or a read-write lock. A semaphore gets two
    /// workers more than its permits, so that its limit is contended.
    pub(crate) fn on(mut self, primitive: Primitive) -> Self {
        if let Primitive::Semaphore { limit } = primitive {
            self.workers = limit as usize + 2;
        }
        self.primitive = primitive;
        self
    }

    /// Connects the workers (each its own driver) to `url` and starts them, then
    /// lets them run for [`STEADY`] once they have been granted the lock a few times.
    pub(crate) async fn start_workers(&self, url: &str) -> Running {
        let mut lockers = Vec::new();
        for _ in 0..self.workers {
            let driver = lockkit::driver::connect(url)
                .await
                .unwrap_or_else(|e| panic!("{}: connecting a worker: {e}", self.backend));
            lockers.push(Locker::new(driver));
        }
        let mut workload = Workload::new(self.key.clone(), RUN_LIMIT);
        workload.ttl = self.ttl;
        workload.hold = self.hold;
        workload.primitive = self.primitive;
        let running = workload.start(lockers, &self.recorder, &self.resource);
        self.wait_until("three grants before the fault", |h| h.grants.len() >= 3)
            .await;
        sleep(STEADY).await;
        running
    }

    /// Polls the history (every 10 ms, at most [`RECOVERY_LIMIT`]) until `done`.
    pub(crate) async fn wait_until(&self, what: &str, done: impl Fn(&History) -> bool) {
        let limit = Instant::now() + RECOVERY_LIMIT;
        while !self.recorder.inspect(&done) {
            assert!(
                Instant::now() < limit,
                "{} / {}: no {what} within {RECOVERY_LIMIT:?}; failures: {:?}",
                self.backend,
                self.fault,
                last_failures(&self.recorder.history())
            );
            sleep(Duration::from_millis(10)).await;
        }
    }

    /// Waits for a grant after `healed` that has written, lets the workers run for
    /// [`STEADY`] more, stops them, checks
    /// the history against `promise`, and writes the row.
    pub(crate) async fn finish(
        self,
        running: Running,
        started: Instant,
        healed: Instant,
        promise: Promise,
    ) -> Verdict {
        self.wait_until("grant and write after the fault", |h| {
            h.written_after(healed)
        })
        .await;
        sleep(STEADY).await;
        running.stop().await;
        let history = self.recorder.history();
        let verdict = history::check(&history);
        let recovery = history
            .first_grant_after(healed)
            .map(|g| g.granted - healed)
            .expect("waited for it above");
        eprintln!(
            "{} / {}: {verdict:?}, fault {:?}, recovered {recovery:?} after it ended",
            self.backend,
            self.fault,
            healed - started
        );
        write_row(&self, &verdict, healed - started, recovery, promise);
        if let Promise::Safe = promise {
            assert!(
                verdict.is_safe(),
                "{} / {}: the history breaks a promise: {verdict:?}",
                self.backend,
                self.fault
            );
        }
        verdict
    }
}

/// The first release failure and the last three failures, for a failure message.
fn last_failures(h: &History) -> Vec<String> {
    let first_release = h.failures.iter().find(|f| f.operation == "release");
    first_release
        .into_iter()
        .chain(h.failures.iter().rev().take(3))
        .map(|f| format!("{} {}", f.operation, f.error))
        .collect()
}

fn write_row(trial: &Trial, v: &Verdict, fault: Duration, recovery: Duration, promise: Promise) {
    let Ok(dir) = std::env::var("LOCKKIT_RELIABILITY_DIR") else {
        return;
    };
    let row = serde_json::json!({
        "backend": trial.backend,
        "fault": trial.fault,
        "verdict": v,
        "fault_ms": fault.as_millis() as u64,
        "recovery_ms": recovery.as_millis() as u64,
        "documented": match promise { Promise::Safe => None, Promise::Documented(why) => Some(why) },
    });
    std::fs::create_dir_all(&dir).unwrap();
    let file = format!("{}--{}.json", trial.backend, trial.fault.replace(' ', "-"));
    std::fs::write(
        std::path::Path::new(&dir).join(file),
        serde_json::to_vec_pretty(&row).unwrap(),
    )
    .unwrap();
}
