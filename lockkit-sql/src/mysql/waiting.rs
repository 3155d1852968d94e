//! An exclusive acquire that waits on the key's bell (see [`super::doorbell`])
//! between attempts, instead of polling, and keeps its place in the key's queue
//! ([`crate::turns`]) from its first refused attempt to its grant or give-up. A
//! failed connection is transient, as for every SQL waiter (see `crate::wait`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockkit_core::driver::{Attempt, Busy, Contender, Contention};
use lockkit_core::sync::lock;
use lockkit_core::{AcquireRequest, Grant, LockError, Result, Wait, async_trait};
use tokio::time::Instant;

use super::bell_wait::{self, Rung};
use super::doorbell::{BELL_CAP, Bell};
use super::first_in_line::{self, Slept};
use super::leases::MySqlLeases;
use crate::error::{is_transient, was_interrupted};
use crate::lease::LeaseBackend;
use crate::turns;
use crate::wait::{Armed, failed};

/// The longest the waiter first in line sleeps before it looks again, when no
/// release wakes it (a release by a client that does not, a wake-up lost to a
/// failed connection); a holder's lease ending wakes it anyway.
const FIRST_IN_LINE_CAP: Duration = Duration::from_millis(250);

/// The attempts of `req` (exclusive, willing to wait), waiting on the key's
/// bell between them.
pub(super) fn contention<'a>(leases: &'a MySqlLeases, req: &'a AcquireRequest) -> Contention<'a> {
    let policy = crate::wait::policy(<MySqlLeases as LeaseBackend>::POLL_CAP);
    let waiter = Waiter {
        leases,
        req,
        wake: leases.wakers().notify(req.key.as_str()),
        state: Arc::default(),
        queued: None,
    };
    Contention::new(waiter).with_policy(policy)
}

struct Waiter<'a> {
    leases: &'a MySqlLeases,
    req: &'a AcquireRequest,
    /// This process's wake-up of the key, for as long as the acquire waits.
    wake: Arc<tokio::sync::Notify>,
    /// Where the waiter stands: set by each wait on the bell, taken by the
    /// attempt after it.
    state: Arc<Mutex<State>>,
    /// When this waiter's queue row was last written.
    queued: Option<Instant>,
}

/// Where a waiter stands between two attempts.
#[derive(Default)]
enum State {
    /// No bell: attempt on the pool, then wait on the key's bell.
    #[default]
    Free,
    /// The key's bell is ours: attempt on its connection, and keep the bell
    /// with a grant (its holder rings it at the release). `rung`: the bell came
    /// with a release (its ring, or the end of our sleep), so the attempt
    /// expects the key free ([`MySqlLeases::take_rung`]). `found_free`: the
    /// last sleep found the key free ([`Slept::Free`]), so a refusal now is
    /// another waiter's turn.
    Bell {
        bell: Bell,
        rung: bool,
        found_free: bool,
    },
    /// The last wait on the bell ended at once: poll once, then wait again.
    PollOnce,
    /// The server cannot carry the bell: poll from now on.
    Polling,
}

impl State {
    /// Where a wait on the bell leaves the waiter.
    fn after_wait(rung: Rung) -> Self {
        match rung {
            Rung::Ours { bell, rung } => State::Bell {
                bell,
                rung,
                found_free: false,
            },
            Rung::TimedOut { at_once: true } => State::PollOnce,
            Rung::TimedOut { at_once: false } => State::Free,
            Rung::Unusable => State::Polling,
        }
    }

    /// Where the first in line's sleep leaves it: with the bell, woken or not,
    /// unless its connection failed (then the next waiter has the bell).
    fn after_sleep(slept: Option<(Bell, Slept)>) -> Self {
        match slept {
            Some((bell, slept)) => State::Bell {
                bell,
                rung: slept == Slept::Woken,
                found_free: slept == Slept::Free,
            },
            None => State::Free,
        }
    }
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

    /// An attempt on the bell's connection: the one that just answered, so no
    /// pool and no ping.
    async fn attempt_with(&self, bell: &mut Bell, rung: bool) -> Result<Option<Grant>> {
        let leases = self.leases;
        match bell.connection() {
            Some(conn) if rung => leases.take_rung(conn, self.req).await,
            Some(conn) => leases.acquire_exclusive_on(conn, self.req).await,
            None => leases.try_acquire(self.req).await,
        }
    }

    /// Waits on the key's bell: the next state is what the wait comes to.
    fn wait_on(&self, bell: Bell) -> Busy {
        let (state, statements) = (self.state.clone(), self.leases.doorbells.wait_statements());
        // Back before the queue row lapses, to push it out.
        let (key, cap) = (
            self.req.key.clone(),
            self.within_wait(BELL_CAP.min(turns::REFRESH)),
        );
        Busy::trusting(async move {
            let rung = bell_wait::wait(bell, statements, key, cap).await;
            *lock(&state) = State::after_wait(rung);
            Ok(())
        })
    }

    /// First in line (we have the bell) behind a holder without one: nothing
    /// will ring. Sleeps on the bell's connection, where the release wakes us.
    fn sleep_on(&self, bell: Bell) -> Busy {
        let (state, statements) = (self.state.clone(), self.leases.doorbells.wait_statements());
        let (key, cap) = (self.req.key.clone(), self.within_wait(FIRST_IN_LINE_CAP));
        Busy::trusting(async move {
            let slept = first_in_line::sleep(bell, statements, key, cap).await;
            *lock(&state) = State::after_sleep(slept);
            Ok(())
        })
    }

    /// Queues this waiter after a refused attempt, or pushes its row out when
    /// [`turns::REFRESH`] has passed.
    async fn keep_place(&mut self) -> Result<()> {
        if self.queued.is_some_and(|at| at.elapsed() < turns::REFRESH) {
            return Ok(());
        }
        self.leases.enqueue_row(self.req).await?;
        self.queued = Some(Instant::now());
        Ok(())
    }

    /// Takes a granted waiter's row out of the queue, if it has one, without
    /// holding up the grant ([`MySqlLeases::dequeue_row_later`]).
    fn leave_queue_granted(&mut self) {
        if self.queued.take().is_some() {
            self.leases.dequeue_row_later(self.req);
        }
    }

    /// Takes this waiter's row out of the queue, if it has one. A grant stands
    /// if that fails: the row lapses.
    async fn leave_queue(&mut self) {
        if self.queued.take().is_some()
            && let Err(e) = self.leases.dequeue_row(self.req).await
        {
            tracing::debug!(error = %e, "could not leave the queue; the row lapses");
        }
    }

    /// One attempt, where the last wait left the waiter.
    async fn attempt_once(&mut self) -> Result<Attempt> {
        let leases = self.leases;
        let armed = Armed::new([self.wake.clone()]);
        // Taken out: an attempt dropped half-way closes a bell it had, which
        // frees the bell for the next waiter.
        let state = std::mem::take(&mut *self.state());
        let (mut bell, rung, found_free) = match state {
            State::Bell {
                bell,
                rung,
                found_free,
            } => (bell, rung, found_free),
            other => {
                match leases.try_acquire(self.req).await {
                    Ok(Some(grant)) => return Ok(Attempt::Granted(grant)),
                    Ok(None) => {}
                    Err(e) => return failed(e),
                }
                return Ok(Attempt::Busy(match other {
                    State::Polling => {
                        *self.state() = State::Polling;
                        armed.busy()
                    }
                    State::PollOnce => armed.busy(),
                    _ => match leases.doorbells.connection(&self.req.key).await {
                        Some(bell) => self.wait_on(bell),
                        // Every bell connection is in use: poll.
                        None => armed.busy(),
                    },
                }));
            }
        };
        match self.attempt_with(&mut bell, rung).await {
            Ok(Some(grant)) => {
                leases.doorbells.keep(&self.req.key, &self.req.owner, bell);
                Ok(Attempt::Granted(grant))
            }
            // The key was free and is still not ours: a waiter queued ahead
            // has the turn ([`crate::turns`]), and may be a writer waiting for
            // this very bell. Hand the bell on, and poll.
            Ok(None) if found_free => {
                leases.doorbells.ring_unkept(bell).await;
                Ok(Attempt::Busy(armed.busy()))
            }
            Ok(None) => Ok(Attempt::Busy(self.sleep_on(bell))),
            // A release's wake-up ended this attempt instead of our sleep
            // ([`first_in_line`]): it rolled back; attempt again.
            Err(e) if was_interrupted(&e) => {
                *self.state() = State::Bell {
                    bell,
                    rung: false,
                    found_free: false,
                };
                Ok(Attempt::Busy(Busy::woken_by(async { Ok(()) })))
            }
            // Its connection may be the one that failed: closing it frees the
            // bell for the next waiter.
            Err(e) if is_transient(&e) => failed(e),
            Err(e) => {
                *self.state() = State::Bell {
                    bell,
                    rung: false,
                    found_free: false,
                };
                Err(e)
            }
        }
    }
}

#[async_trait]
impl Contender for Waiter<'_> {
    async fn attempt(&mut self) -> Result<Attempt> {
        let attempt = self.attempt_once().await?;
        match attempt {
            Attempt::Granted(_) => self.leave_queue_granted(),
            Attempt::Busy(_) => {
                if let Err(e) = self.keep_place().await {
                    return failed(e);
                }
            }
            _ => {}
        }
        Ok(attempt)
    }

    /// A bell we got but leave without a grant goes to the next waiter, and
    /// our queue row goes.
    async fn give_up(&mut self, _: &LockError) {
        self.leave_queue().await;
        let state = std::mem::take(&mut *self.state());
        if let State::Bell { bell, .. } = state {
            self.leases.doorbells.ring_unkept(bell).await;
        }
    }
}
