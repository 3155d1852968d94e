//! An exclusive acquire that waits on the key's bell (see [`super::doorbell`])
//! between attempts, instead of polling. A failed connection is transient, as
//! for every SQL waiter (see `crate::wait`).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use lockkit_core::driver::{Attempt, Busy, Contender, wait_for_grant};
use lockkit_core::{AcquireRequest, FencingToken, Grant, LockError, Result, Wait, async_trait};
use tokio::time::Instant;

use super::bell_wait::{self, Rung, Taker};
use super::doorbell::{BELL_CAP, Bell};
use super::leases::MySqlLeases;
use super::{bound, first_in_line};
use crate::error::{is_transient, was_interrupted};
use crate::lease::LeaseBackend;
use crate::wait::{Armed, failed};

/// The longest the waiter first in line sleeps before it looks again, when no
/// release wakes it (a release by a client that does not, a wake-up lost to a
/// failed connection); a holder's lease ending wakes it anyway.
const FIRST_IN_LINE_CAP: Duration = Duration::from_millis(250);

/// Waits for `req` (exclusive, willing to wait) on the key's bell.
pub(super) async fn acquire(leases: &MySqlLeases, req: &AcquireRequest) -> Result<Grant> {
    let policy = crate::wait::policy(<MySqlLeases as LeaseBackend>::POLL_CAP);
    let mut waiter = Waiter {
        leases,
        req,
        wake: leases.wakers().notify(req.key.as_str()),
        state: Arc::default(),
    };
    wait_for_grant(req, &policy, &mut waiter).await
}

struct Waiter<'a> {
    leases: &'a MySqlLeases,
    req: &'a AcquireRequest,
    /// This process's wake-up of the key, for as long as the acquire waits.
    wake: Arc<tokio::sync::Notify>,
    /// What the waits on the bell learnt, for the next attempt.
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// The bell, once a wait on it got it: we are first in line.
    bell: Option<Bell>,
    /// The key, taken on the server by the wait on the bell: its token and
    /// deadline ([`super::bound`]).
    took: Option<(FencingToken, Instant)>,
    /// A release ended our sleep as the first in line: the next attempt
    /// expects the key free ([`MySqlLeases::take_rung`]).
    rung: bool,
    /// The server cannot carry the bell: poll from now on.
    polling: bool,
    /// The last wait ended at once: poll before the next.
    poll_once: bool,
    /// The acquire has ended without a grant: a wait on the bell still on frees
    /// the key if it takes it.
    gave_up: bool,
}

impl State {
    /// What a wait on the bell came to, for the next attempt.
    fn record(&mut self, rung: Rung) {
        match rung {
            Rung::Took {
                bell,
                token,
                deadline,
            } => (self.bell, self.took) = (Some(bell), Some((token, deadline))),
            Rung::Ours { bell } => self.bell = Some(bell),
            Rung::TimedOut { at_once } => self.poll_once = at_once,
            Rung::Unusable => self.polling = true,
        }
    }
}

impl Waiter<'_> {
    /// The grant of a key the wait on the bell took: its bell kept with it, its
    /// confirmation due unless it is released first ([`bound::confirm`]).
    fn took_on_ring(&self, mut bell: Bell, token: FencingToken, deadline: Instant) -> Grant {
        let (leases, req) = (self.leases, self.req);
        let released = (bound::CONFIRM_AFTER, bell.on_ring());
        let how = leases.confirmation.clone();
        let lease = (req.key.clone(), &req.owner, token);
        let loss = bound::confirm(how, lease, released, deadline);
        leases.doorbells.keep(&req.key, &req.owner, bell);
        Grant::of(req, token, deadline).with_loss_signal(loss)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// How long a wait may last: `cap`, within the request's wait.
    fn within_wait(&self, cap: Duration) -> Duration {
        match self.req.wait {
            Wait::Until(deadline) => deadline.saturating_duration_since(Instant::now()),
            _ => cap,
        }
        .min(cap)
    }
}

/// A future that, dropped before its end, is finished in a task of its own: the
/// wait on a bell, whose server may take the key for us at any moment.
struct FinishedOnDrop(Option<Pin<Box<dyn Future<Output = Result<()>> + Send>>>);

impl FinishedOnDrop {
    fn new(wait: impl Future<Output = Result<()>> + Send + 'static) -> Self {
        Self(Some(Box::pin(wait)))
    }
}

impl Future for FinishedOnDrop {
    type Output = Result<()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        let Some(wait) = self.0.as_mut() else {
            return Poll::Ready(Ok(()));
        };
        let done = ready!(wait.as_mut().poll(cx));
        self.0 = None;
        Poll::Ready(done)
    }
}

impl Drop for FinishedOnDrop {
    fn drop(&mut self) {
        if let (Some(wait), Ok(runtime)) = (self.0.take(), tokio::runtime::Handle::try_current()) {
            runtime.spawn(wait);
        }
    }
}

fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[async_trait]
impl Contender for Waiter<'_> {
    async fn attempt(&mut self) -> Result<Attempt> {
        let leases = self.leases;
        let armed = Armed::new([self.wake.clone()]);
        let (bell, rung, took) = {
            let mut state = self.state();
            (
                state.bell.take(),
                std::mem::take(&mut state.rung),
                state.took.take(),
            )
        };
        let granted = match (bell, took) {
            // Rung, and the key taken on the server with the wake-up.
            (Some(bell), Some((token, deadline))) => {
                return Ok(Attempt::Granted(self.took_on_ring(bell, token, deadline)));
            }
            // First in line, or the key was not free when rung: on the bell's
            // connection.
            (Some(mut bell), None) => {
                let granted = match bell.connection() {
                    Some(conn) if rung => leases.take_rung(conn, self.req).await,
                    Some(conn) => leases.acquire_exclusive_on(conn, self.req).await,
                    None => leases.try_acquire(self.req).await,
                };
                match granted {
                    Ok(Some(grant)) => {
                        leases.doorbells.keep(&self.req.key, &self.req.owner, bell);
                        return Ok(Attempt::Granted(grant));
                    }
                    // A release's wake-up ended this attempt instead of our
                    // sleep ([`first_in_line`]): it rolled back; attempt again.
                    Err(e) if was_interrupted(&e) => {
                        self.state().bell = Some(bell);
                        return Ok(Attempt::Busy(Busy::woken_by(async { Ok(()) })));
                    }
                    // Its connection may be the one that failed: closing it
                    // frees the bell for the next waiter.
                    Err(e) if is_transient(&e) => return failed(e),
                    other => {
                        self.state().bell = Some(bell);
                        other?
                    }
                }
            }
            (None, _) => match leases.try_acquire(self.req).await {
                Ok(granted) => granted,
                Err(e) => return failed(e),
            },
        };
        if let Some(grant) = granted {
            return Ok(Attempt::Granted(grant));
        }
        let poll = armed.busy();
        // First in line (we have the bell) behind a holder without one: nothing
        // will ring. Sleep on the bell's connection, where the release wakes us.
        let (first_in_line, must_poll) = {
            let mut state = self.state();
            let bell = state.bell.take();
            let must_poll = state.polling || std::mem::take(&mut state.poll_once);
            (bell, must_poll)
        };
        if let Some(bell) = first_in_line {
            let (state, statements) = (self.state.clone(), leases.doorbells.wait_statements());
            let (key, cap) = (self.req.key.clone(), self.within_wait(FIRST_IN_LINE_CAP));
            return Ok(Attempt::Busy(Busy::trusting(async move {
                let slept = first_in_line::sleep(bell, statements, key, cap).await;
                let mut state = lock(&state);
                (state.bell, state.rung) = match slept {
                    Some((bell, woken)) => (Some(bell), woken),
                    None => (None, false),
                };
                Ok(())
            })));
        }
        // The bell cannot be used now: poll as every SQL waiter does.
        if must_poll {
            return Ok(Attempt::Busy(poll));
        }
        let Some(bell) = leases.doorbells.connection(&self.req.key).await else {
            return Ok(Attempt::Busy(poll));
        };
        let (state, statements) = (self.state.clone(), leases.doorbells.wait_statements());
        let (key, cap) = (self.req.key.clone(), self.within_wait(BELL_CAP));
        let taker = Taker {
            owner: self.req.owner.to_hex(),
            label: self.req.stored_label(),
            ttl: self.req.ttl,
        };
        // Dropped while it waits (the acquire cancelled, or out of time), the
        // wait is finished in a task of its own, which frees a key it took.
        let limit = statements.timeout;
        let wait = async move {
            let rung = bell_wait::wait(bell, statements, key, taker, cap).await;
            let left_behind = {
                let mut state = lock(&state);
                if state.gave_up {
                    Some(rung)
                } else {
                    state.record(rung);
                    None
                }
            };
            if let Some(Rung::Took { bell, .. }) = left_behind {
                bell_wait::release_and_ring(bell, limit).await;
            }
            Ok(())
        };
        Ok(Attempt::Busy(Busy::trusting(FinishedOnDrop::new(wait))))
    }

    /// A bell we got but leave without a grant goes to the next waiter; a key
    /// the wait took that no attempt reported (the acquire was cancelled as it
    /// came) is released first. A wait still on frees what it takes.
    async fn give_up(&mut self, _: &LockError) {
        let (bell, took) = {
            let mut state = self.state();
            state.gave_up = true;
            (state.bell.take(), state.took.take())
        };
        let Some(bell) = bell else {
            return;
        };
        if took.is_none() {
            return self.leases.doorbells.ring_unkept(bell).await;
        }
        let (key, owner) = (&self.req.key, &self.req.owner);
        self.leases.doorbells.keep(key, owner, bell);
        if let Err(e) = self.leases.release(key, owner).await {
            tracing::debug!(error = %e, "MySQL: could not release a key taken for a cancelled acquire");
        }
    }
}
