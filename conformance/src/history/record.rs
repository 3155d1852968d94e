//! The history: grants, writes and failed operations, on the monotonic clock.

use std::sync::{Arc, Mutex, MutexGuard};

use lockkit_core::LockMode;
use lockkit_core::sync::lock;
use tokio::time::Instant;

/// Identifies a grant in a [`History`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GrantId(pub usize);

/// One successful acquire and the interval in which its client knew it held the
/// lock.
#[derive(Debug, Clone)]
pub struct GrantRecord {
    /// Which client (a worker index, or a label's index for an outside holder).
    pub client: usize,
    /// What was granted: the lock, a read hold, or a permit.
    pub mode: LockMode,
    /// The fencing token of the grant.
    pub token: u64,
    /// When the acquire was invoked.
    pub invoked: Instant,
    /// When the acquire returned the grant: the client knows it holds from here.
    pub granted: Instant,
    /// Until when the client knew it held the lock: the earliest of the release's
    /// invocation, the moment it was told the lock was lost, and its lease deadline
    /// (for an outside holder: when it was stopped or killed). `None` while open.
    pub held_until: Option<Instant>,
}

/// One fenced write, as the resource saw it.
#[derive(Debug, Clone)]
pub struct WriteRecord {
    /// The grant the writer held (or believed it held).
    pub grant: GrantId,
    /// The token presented.
    pub token: u64,
    /// When the writer invoked the write.
    pub invoked: Instant,
    /// The resource's order of writes (0, 1, 2, …), accepted or not.
    pub seq: u64,
    /// When the resource decided.
    pub applied: Instant,
    /// Whether the resource accepted it.
    pub accepted: bool,
}

/// An operation that did not succeed (an acquire that timed out or failed while a
/// server was down, a release that found the lock gone).
#[derive(Debug, Clone)]
pub struct Failure {
    /// Which client.
    pub client: usize,
    /// `acquire` or `release`.
    pub operation: &'static str,
    /// When it was invoked.
    pub invoked: Instant,
    /// When it returned.
    pub completed: Instant,
    /// The error, as displayed.
    pub error: String,
}

/// Everything recorded in one run.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Every grant, in the order they were recorded.
    pub grants: Vec<GrantRecord>,
    /// Every write, in the order they were recorded (sort by `seq` for the
    /// resource's order).
    pub writes: Vec<WriteRecord>,
    /// Failed acquires and releases.
    pub failures: Vec<Failure>,
    /// Successful releases.
    pub releases: usize,
}

impl History {
    /// Every operation: acquires (granted or failed), writes and releases.
    pub fn operations(&self) -> usize {
        self.grants.len() + self.writes.len() + self.failures.len() + self.releases
    }

    /// The first grant given at or after `since`, if any.
    pub fn first_grant_after(&self, since: Instant) -> Option<&GrantRecord> {
        self.grants
            .iter()
            .filter(|g| g.granted >= since)
            .min_by_key(|g| g.granted)
    }

    /// Whether a grant given at or after `since` has had a write decided by the
    /// resource.
    pub fn written_after(&self, since: Instant) -> bool {
        self.writes.iter().any(|w| {
            self.grants
                .get(w.grant.0)
                .is_some_and(|g| g.granted >= since)
        })
    }
}

/// Records a [`History`] from many tasks at once. Cloning shares the history.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    inner: Arc<Mutex<History>>,
}

impl Recorder {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, History> {
        lock(&self.inner)
    }

    /// Records an exclusive grant to `client`, open until [`Recorder::held_until`]
    /// closes it.
    pub fn grant(&self, client: usize, token: u64, invoked: Instant, granted: Instant) -> GrantId {
        self.grant_of(client, LockMode::Exclusive, token, invoked, granted)
    }

    /// Records a grant of `mode` to `client`, open until [`Recorder::held_until`]
    /// closes it.
    pub fn grant_of(
        &self,
        client: usize,
        mode: LockMode,
        token: u64,
        invoked: Instant,
        granted: Instant,
    ) -> GrantId {
        let mut h = self.lock();
        h.grants.push(GrantRecord {
            client,
            mode,
            token,
            invoked,
            granted,
            held_until: None,
        });
        GrantId(h.grants.len() - 1)
    }

    /// Closes a grant: its client knew it held the lock until `until`.
    pub fn held_until(&self, grant: GrantId, until: Instant) {
        if let Some(g) = self.lock().grants.get_mut(grant.0) {
            g.held_until = Some(until);
        }
    }

    /// The token of a recorded grant.
    pub fn token(&self, grant: GrantId) -> Option<u64> {
        self.lock().grants.get(grant.0).map(|g| g.token)
    }

    pub(crate) fn write(&self, record: WriteRecord) {
        self.lock().writes.push(record);
    }

    /// Records a failed operation.
    pub fn failure(&self, client: usize, operation: &'static str, invoked: Instant, error: String) {
        self.lock().failures.push(Failure {
            client,
            operation,
            invoked,
            completed: Instant::now(),
            error,
        });
    }

    /// Records a successful release.
    pub fn released(&self) {
        self.lock().releases += 1;
    }

    /// A copy of the history so far.
    pub fn history(&self) -> History {
        self.lock().clone()
    }

    /// Answers `f` about the history so far without copying it (for polling).
    pub fn inspect<R>(&self, f: impl FnOnce(&History) -> R) -> R {
        f(&self.lock())
    }
}
