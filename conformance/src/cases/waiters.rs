//! Waiters on their own drivers, for the cases about queues: each proves it was
//! refused once before it waits, logs its grant, and holds until told to release.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockkit_core::sync::lock;
use lockkit_core::{LockError, LockGuard, LockMode, Locker};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep, timeout};

use crate::check::{CaseError, CaseResult, fail};
use crate::harness::Ctx;
use crate::observe::LOOK_EVERY;

/// The lease waiters take.
const TTL: Duration = Duration::from_secs(10);
/// How long a waiter waits before giving up (the case fails well before).
const WAIT: Duration = Duration::from_secs(60);

/// One grant a waiter saw.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Granted {
    pub(crate) name: &'static str,
    pub(crate) token: u64,
    pub(crate) at: Instant,
}

/// The grants seen so far, in the order they happened.
#[derive(Debug, Clone, Default)]
pub(crate) struct Log(Arc<Mutex<Vec<Granted>>>);

impl Log {
    fn push(&self, g: Granted) {
        lock(&self.0).push(g);
    }

    pub(crate) fn all(&self) -> Vec<Granted> {
        lock(&self.0).clone()
    }

    pub(crate) fn names(&self) -> Vec<&'static str> {
        self.all().iter().map(|g| g.name).collect()
    }

    /// The grant of `name`, or a failure saying there was none.
    pub(crate) fn get(&self, name: &str) -> Result<Granted, CaseError> {
        match self.all().into_iter().find(|g| g.name == name) {
            Some(grant) => Ok(grant),
            None => fail!("{name} was never granted: {:?}", self.names()),
        }
    }
}

/// Takes `key` in `mode` through `locker`: at once, or waiting at most `wait`.
pub(crate) async fn take(
    locker: &Locker,
    key: &str,
    mode: LockMode,
    wait: Option<Duration>,
) -> Result<LockGuard, LockError> {
    let semaphore;
    let request = match mode {
        LockMode::Permit { limit } => {
            semaphore = locker.semaphore(key, limit);
            semaphore.acquire()
        }
        LockMode::Shared => locker.read_lock(key),
        _ => locker.lock(key),
    };
    let mut request = request.ttl(TTL);
    if super::serves_in_order(&locker.capabilities()) {
        request = request.fair();
    }
    match wait {
        None => request.no_wait().await,
        Some(wait) => request.wait(wait).await,
    }
}

/// A waiter task: refused once, then waiting, then holding until released.
pub(crate) struct Waiter {
    release: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), LockError>>,
}

impl Waiter {
    /// Starts a waiter for `key` in `mode` on a driver of its own, and returns once
    /// it has been refused the key at once (so it is about to wait, not to take a
    /// free key).
    pub(crate) async fn start(
        ctx: &Ctx,
        key: &str,
        name: &'static str,
        mode: LockMode,
        log: &Log,
    ) -> Result<Self, CaseError> {
        let locker = ctx.locker().await?;
        let (release, released) = oneshot::channel::<()>();
        let (refused_tx, refused) = oneshot::channel::<Result<(), String>>();
        let (key, log) = (key.to_owned(), log.clone());
        let task = tokio::spawn(async move {
            let first = match take(&locker, &key, mode, None).await {
                Err(LockError::Contended { .. }) => Ok(()),
                Ok(g) => Err(format!("{name} was granted at once (token {})", g.token())),
                Err(e) => Err(format!("{name}'s first try failed: {e}")),
            };
            let go_on = first.is_ok();
            let _ = refused_tx.send(first);
            if !go_on {
                return Ok(());
            }
            let g = take(&locker, &key, mode, Some(WAIT)).await?;
            log.push(Granted {
                name,
                token: g.token().get(),
                at: Instant::now(),
            });
            let _ = released.await;
            g.release().await
        });
        match timeout(WAIT, refused).await {
            Ok(Ok(Ok(()))) => Ok(Self {
                release: Some(release),
                task,
            }),
            Ok(Ok(Err(why))) => Err(CaseError::Failed(why)),
            Ok(Err(_)) => Err(CaseError::Failed(format!("{name}'s task ended early"))),
            Err(_) => Err(CaseError::Failed(format!(
                "{name} did not even try within 60 s"
            ))),
        }
    }

    /// Lets the waiter release once granted, and waits for it to finish.
    pub(crate) async fn release(mut self) -> CaseResult {
        if let Some(tx) = self.release.take() {
            let _ = tx.send(());
        }
        match timeout(WAIT, self.task).await {
            Ok(Ok(r)) => Ok(r?),
            Ok(Err(e)) => fail!("a waiter task panicked: {e}"),
            Err(_) => fail!("a waiter was not served and released within 60 s"),
        }
    }

    /// Drops the waiter's acquire mid-wait, as a caller that goes away does.
    pub(crate) async fn cancel(self) {
        self.task.abort();
        let _ = self.task.await;
    }
}

/// Waits (bounded by `limit`) until the log holds exactly `want`, in any order.
pub(crate) async fn until_granted(
    log: &Log,
    want: &[&str],
    limit: Duration,
    what: &str,
) -> CaseResult {
    let mut want: Vec<&str> = want.to_vec();
    want.sort_unstable();
    let look = async {
        loop {
            let mut now = log.names();
            now.sort_unstable();
            if now == want || now.len() > want.len() {
                return now;
            }
            sleep(LOOK_EVERY).await;
        }
    };
    match timeout(limit, look).await {
        Ok(now) if now == want => Ok(()),
        Ok(now) => fail!("{what}: granted {now:?}, expected exactly {want:?}"),
        Err(_) => fail!(
            "{what}: expected {want:?} to be granted within {limit:?}, got {:?}",
            log.names()
        ),
    }
}

/// Waits (bounded by `limit`) until the log holds `n` grants, whoever they are;
/// returns their names. More than `n` is a failure.
pub(crate) async fn until_count(
    log: &Log,
    n: usize,
    limit: Duration,
    what: &str,
) -> Result<Vec<&'static str>, CaseError> {
    let look = async {
        loop {
            let now = log.names();
            if now.len() >= n {
                return now;
            }
            sleep(LOOK_EVERY).await;
        }
    };
    match timeout(limit, look).await {
        Ok(now) if now.len() == n => Ok(now),
        Ok(now) => fail!("{what}: granted {now:?}, expected {n} grant(s)"),
        Err(_) => fail!(
            "{what}: expected {n} grant(s) within {limit:?}, got {:?}",
            log.names()
        ),
    }
}
