//! [`Contention`]: what a driver answers for one acquire; and [`acquire`]: the
//! engine's entry, where every acquire of every driver starts.

use std::fmt;

use async_trait::async_trait;

use super::attempt::{Attempt, Contender};
use super::engine::wait_for_grant;
use super::policy::WaitPolicy;
use crate::driver::{AcquireRequest, Capabilities, Grant, LockDriver};
use crate::error::{LockError, Result};

/// A driver's side of one acquire ([`LockDriver::contend`]): the [`Contender`]
/// whose attempts the engine makes, and the [`WaitPolicy`] that paces them.
pub struct Contention<'a> {
    contender: Box<dyn Contender + 'a>,
    policy: WaitPolicy,
}

impl fmt::Debug for Contention<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Contention")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl<'a> Contention<'a> {
    /// Attempts by `contender`, paced by [`WaitPolicy::DEFAULT`].
    pub fn new(contender: impl Contender + 'a) -> Self {
        Self {
            contender: Box::new(contender),
            policy: WaitPolicy::DEFAULT,
        }
    }

    /// The same attempts, paced by `policy`.
    pub fn with_policy(mut self, policy: WaitPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// A grant the driver made without a round trip (the owner's own live hold,
    /// granted again): the first attempt returns it.
    pub fn granted(grant: Grant) -> Self {
        Self::new(Granted(Some(grant)))
    }
}

/// The contender of [`Contention::granted`].
struct Granted(Option<Grant>);

#[async_trait]
impl Contender for Granted {
    async fn attempt(&mut self) -> Result<Attempt> {
        match self.0.take() {
            Some(grant) => Ok(Attempt::Granted(grant)),
            None => Err(LockError::Config(
                "BUG: a granted contention was attempted twice".into(),
            )),
        }
    }
}

/// Acquires `req` on `driver`: refuses what the driver cannot grant (a mode
/// missing from its [`Capabilities`], a semaphore of no permits), then makes the
/// attempts of its [`LockDriver::contend`] until one grants, the wait of `req`
/// runs out, or `req` is cancelled. This is the only way an acquire reaches a
/// driver; [`crate::Locker`] adds reentrancy, release on drop and the watchdog.
///
/// # Errors
///
/// [`LockError::Unsupported`] for a mode the driver lacks, [`LockError::Config`]
/// for a limit of 0, [`LockError::Contended`] for [`crate::Wait::NoWait`],
/// [`LockError::Timeout`] when the wait runs out, [`LockError::Cancelled`], or
/// the driver's error.
pub async fn acquire<D: LockDriver + ?Sized>(driver: &D, req: &AcquireRequest) -> Result<Grant> {
    refuse_impossible(driver.name(), driver.capabilities(), req)?;
    let Contention {
        mut contender,
        policy,
    } = driver.contend(req).await?;
    wait_for_grant(req, driver.name(), &policy, &mut *contender).await
}

/// Refuses the requests no driver is asked for: a mode missing from `caps`, a
/// semaphore of no permits. The engine checks every acquire; [`crate::Locker`]
/// checks before re-entry too, so that a mode the backend lacks is refused even
/// while the owner holds the key.
pub(crate) fn refuse_impossible(
    driver: &'static str,
    caps: Capabilities,
    req: &AcquireRequest,
) -> Result<()> {
    if !caps.supports(req.mode) {
        return Err(req.unsupported(driver));
    }
    if req.fair && !caps.fair && !caps.fair_on_request {
        return Err(LockError::Unsupported {
            driver,
            capability: "fair locks: waiters served in arrival order",
        });
    }
    if req.mode.limit() == Some(0) {
        return Err(LockError::Config(format!(
            "semaphore `{}`: a limit of 0 permits can never be granted; give at least 1",
            req.key
        )));
    }
    Ok(())
}
