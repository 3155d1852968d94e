//! The workers: acquire, fenced write, hold, fenced write, release — recorded. On
//! a lock, a semaphore's permits, or a read-write lock.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use lockkit_core::{LockError, LockGuard, LockMode, Locker, MultiLockGuard};
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep, sleep_until};

use super::record::Recorder;
use super::resource::FencedResource;

/// How long a worker holds the lock between its two writes, unless set otherwise.
pub const DEFAULT_HOLD: Duration = Duration::from_millis(5);

/// What the workers take on the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Primitive {
    /// The lock: one holder at a time.
    Lock,
    /// One permit each of a semaphore of `limit` permits.
    Semaphore {
        /// The semaphore's permits.
        limit: u32,
    },
    /// A read-write lock: each worker writes every third round (shifted by its
    /// index) and reads otherwise. A reader does not write to the resource.
    ReadWrite,
    /// An election on the key: each worker campaigns, writes with its term as
    /// leader, and resigns.
    Election,
    /// Several keys at once ([`Locker::lock_all`]): the key and `<key>/second`,
    /// named in opposite orders by alternate workers; each writes with the
    /// key's token.
    SeveralKeys,
}

/// What a worker holds: one guard, or a set whose first key is the trial's.
enum Held {
    One(LockGuard),
    Set(MultiLockGuard),
}

impl Held {
    /// The trial key's guard.
    fn guard(&self) -> Option<&LockGuard> {
        match self {
            Held::One(guard) => Some(guard),
            Held::Set(set) => set.guards().first(),
        }
    }

    async fn lost(&self) {
        match self {
            Held::One(guard) => drop(guard.lost().await),
            Held::Set(set) => drop(set.lost().await),
        }
    }

    async fn release(self) -> Result<(), LockError> {
        match self {
            Held::One(guard) => guard.release().await,
            Held::Set(set) => set.release().await,
        }
    }
}

/// How the workers use the lock.
#[derive(Debug, Clone)]
pub struct Workload {
    /// The one key every worker locks.
    pub key: String,
    /// What they take on it.
    pub primitive: Primitive,
    /// The watchdog TTL of each hold.
    pub ttl: Duration,
    /// How long an acquire waits before it gives up (and is recorded as failed).
    pub wait: Duration,
    /// How long a worker holds the lock between its two writes.
    pub hold: Duration,
    /// The pause after a release before the next acquire (gives queued waiters
    /// on unfair backends their turn).
    pub think: Duration,
    /// The pause after a failed acquire or release (servers may be down).
    pub backoff: Duration,
    /// The longest the workers run if [`Running::stop`] is not called first.
    pub run_for: Duration,
}

impl Workload {
    /// A workload on the lock `key` for at most `run_for`, with a 1 s TTL, 3 s
    /// waits, 5 ms holds, 5 ms think time and 50 ms back-off.
    pub fn new(key: impl Into<String>, run_for: Duration) -> Self {
        Self {
            key: key.into(),
            primitive: Primitive::Lock,
            ttl: Duration::from_secs(1),
            wait: Duration::from_secs(3),
            hold: DEFAULT_HOLD,
            think: Duration::from_millis(5),
            backoff: Duration::from_millis(50),
            run_for,
        }
    }

    /// Starts one worker per locker (each should have its own driver and
    /// connections); worker `i` is client `i` in the history.
    pub fn start(
        &self,
        lockers: Vec<Locker>,
        recorder: &Recorder,
        resource: &FencedResource,
    ) -> Running {
        let until = Instant::now() + self.run_for;
        let stop = Arc::new(AtomicBool::new(false));
        let tasks = lockers
            .into_iter()
            .enumerate()
            .map(|(client, locker)| {
                let worker = Worker {
                    client,
                    locker,
                    workload: self.clone(),
                    recorder: recorder.clone(),
                    resource: resource.clone(),
                    stop: stop.clone(),
                };
                tokio::spawn(worker.run(until))
            })
            .collect();
        Running { tasks, stop }
    }
}

/// Workers at work.
#[derive(Debug)]
pub struct Running {
    tasks: Vec<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
}

impl Running {
    /// Tells every worker to stop after its current round, and waits until they
    /// have (each within one acquire wait and one hold).
    pub async fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

struct Worker {
    client: usize,
    locker: Locker,
    workload: Workload,
    recorder: Recorder,
    resource: FencedResource,
    stop: Arc<AtomicBool>,
}

impl Worker {
    async fn run(self, until: Instant) {
        let key = self.workload.key.clone();
        let semaphore = match self.workload.primitive {
            Primitive::Semaphore { limit } => Some(self.locker.semaphore(key.clone(), limit)),
            _ => None,
        };
        let mut round = 0usize;
        while Instant::now() < until && !self.stop.load(Ordering::Relaxed) {
            let invoked = Instant::now();
            if self.workload.primitive == Primitive::SeveralKeys {
                let second = format!("{key}/second");
                let keys = if self.client.is_multiple_of(2) {
                    [key.clone(), second]
                } else {
                    [second, key.clone()]
                };
                let set = self
                    .locker
                    .lock_all(keys)
                    .ttl(self.workload.ttl)
                    .wait(self.workload.wait)
                    .await;
                match set {
                    Ok(set) => self.hold(Held::Set(set), invoked).await,
                    Err(e) => {
                        self.recorder
                            .failure(self.client, "acquire", invoked, e.to_string());
                        sleep(self.workload.backoff).await;
                    }
                }
                continue;
            }
            if self.workload.primitive == Primitive::Election {
                match self.campaign(&key).await {
                    Ok(guard) => self.hold(Held::One(guard), invoked).await,
                    Err(e) => {
                        self.recorder
                            .failure(self.client, "campaign", invoked, e.to_string());
                        sleep(self.workload.backoff).await;
                    }
                }
                continue;
            }
            let request = match (&semaphore, self.workload.primitive) {
                (Some(semaphore), _) => semaphore.acquire(),
                (
                    None,
                    Primitive::Lock
                    | Primitive::Semaphore { .. }
                    | Primitive::Election
                    | Primitive::SeveralKeys,
                ) => self.locker.lock(key.clone()),
                (None, Primitive::ReadWrite) if (self.client + round).is_multiple_of(3) => {
                    self.locker.write_lock(key.clone())
                }
                (None, Primitive::ReadWrite) => self.locker.read_lock(key.clone()),
            };
            round += 1;
            let acquired = request
                .ttl(self.workload.ttl)
                .wait(self.workload.wait)
                .await;
            match acquired {
                Ok(guard) => self.hold(Held::One(guard), invoked).await,
                Err(e) => {
                    self.recorder
                        .failure(self.client, "acquire", invoked, e.to_string());
                    sleep(self.workload.backoff).await;
                }
            }
        }
    }

    /// Campaigns for the election on `key` for at most the workload's wait: the
    /// leadership's guard (its term is its token).
    async fn campaign(&self, key: &str) -> Result<LockGuard, LockError> {
        let election = self.locker.election(key).ttl(self.workload.ttl);
        let value = format!("worker-{}", self.client);
        match tokio::time::timeout(self.workload.wait, election.campaign(value)).await {
            Ok(leading) => Ok(leading?.into_guard()),
            Err(_) => Err(LockError::Timeout {
                key: key.to_owned(),
                waited: self.workload.wait,
            }),
        }
    }

    async fn hold(&self, held: Held, invoked: Instant) {
        let granted = Instant::now();
        let Some(guard) = held.guard() else {
            return;
        };
        let token = guard.token().get();
        let (mode, deadline) = (guard.mode(), guard.deadline());
        let grant = self
            .recorder
            .grant_of(self.client, mode, token, invoked, granted);
        let writes = mode != LockMode::Shared;
        if writes {
            self.resource.write(grant, token);
        }
        // Hold, noting when (if) we are told the lock is lost; keep going either way,
        // as an application stalled between its check and its write would.
        let hold_end = Instant::now() + self.workload.hold;
        let lost_at = tokio::select! {
            () = held.lost() => Some(Instant::now()),
            () = sleep_until(hold_end) => None,
        };
        sleep_until(hold_end).await;
        if writes {
            self.resource.write(grant, token);
        }
        let releasing = Instant::now();
        let known_until = [Some(releasing), lost_at, Some(deadline)]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(releasing);
        self.recorder.held_until(grant, known_until);
        match held.release().await {
            Ok(()) => {
                self.recorder.released();
                sleep(self.workload.think).await;
            }
            Err(e) => {
                self.recorder
                    .failure(self.client, "release", releasing, e.to_string());
                sleep(self.workload.backoff).await;
            }
        }
    }
}
