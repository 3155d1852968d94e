//! An exclusive acquire that waits on the key's bell (see [`super::doorbell`])
//! between attempts, instead of polling. A failed connection is transient, as
//! for every SQL waiter (see `crate::wait`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockkit_core::driver::{Attempt, Busy, Contender, wait_for_grant};
use lockkit_core::{AcquireRequest, Grant, LockError, Result, Wait, async_trait};
use tokio::time::Instant;

use super::doorbell::{self, BELL_CAP, Bell, Rung};
use super::first_in_line;
use super::leases::MySqlLeases;
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
    /// The bell came with a release (its ring, or the end of our sleep): the
    /// next attempt expects the key free ([`MySqlLeases::take_rung`]).
    rung: bool,
    /// The server cannot carry the bell: poll from now on.
    polling: bool,
    /// The last wait ended at once: poll before the next.
    poll_once: bool,
}

impl Waiter<'_> {
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
        let (bell, rung) = {
            let mut state = self.state();
            (state.bell.take(), std::mem::take(&mut state.rung))
        };
        let granted = match bell {
            // Woken by the bell (or first in line): on its connection.
            Some(mut bell) => {
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
            None => match leases.try_acquire(self.req).await {
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
        Ok(Attempt::Busy(Busy::trusting(async move {
            let rung = doorbell::wait(bell, statements, key, cap).await;
            let mut state = lock(&state);
            match rung {
                Rung::Ours { bell, rung } => (state.bell, state.rung) = (Some(bell), rung),
                Rung::TimedOut { at_once } => state.poll_once = at_once,
                Rung::Unusable => state.polling = true,
            }
            Ok(())
        })))
    }

    /// A bell we got but leave without a grant goes to the next waiter.
    async fn give_up(&mut self, _: &LockError) {
        let bell = self.state().bell.take();
        if let Some(bell) = bell {
            self.leases.doorbells.ring_unkept(bell).await;
        }
    }
}
