//! Fault probes of `compare`: a holder process stalled past its lease, and a
//! holder process killed.
//!
//! Both start a holder child (`lockkit __hold`, the conformance suite's holder
//! process) that takes the lock with the watchdog, and a waiter in this process.
//!
//! - **Stalled holder:** the child is stopped with SIGSTOP, so its watchdog cannot
//!   renew. The waiter must get the lock once the lease (or the session) runs out,
//!   with a greater fencing token; a fenced resource that the waiter has written
//!   must reject the holder's stale token; after SIGCONT the holder must learn that
//!   it lost the lock.
//! - **Killed holder:** the child is killed with SIGKILL and never releases. The
//!   waiter must get the lock once the lease (or the session) runs out, with a
//!   greater token.

use std::process::Stdio;
use std::time::{Duration, Instant};

use lockkit::fence::FencedCell;
use lockkit::{FencingToken, LockError, Locker};
use lockkit_conformance::Outcome;
use lockkit_conformance::holder::{self, HolderProcess};
use serde::Serialize;
use tokio::time::timeout;

/// What one probe observed.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ProbeReport {
    /// `stalled_holder` or `killed_holder`.
    pub(crate) name: &'static str,
    pub(crate) outcome: Outcome,
    /// The holder's lease (its watchdog TTL).
    pub(crate) lease_ms: u64,
    pub(crate) holder_token: Option<u64>,
    pub(crate) waiter_token: Option<u64>,
    /// From SIGSTOP (or SIGKILL) of the holder to the waiter's grant.
    pub(crate) freed_after_ms: Option<u64>,
    /// Stalled holder: whether the fenced resource refused the holder's token after
    /// the waiter had written.
    pub(crate) stale_write_rejected: Option<bool>,
    /// Stalled holder: from SIGCONT to the holder reporting its lock lost.
    pub(crate) holder_told_lost_after_ms: Option<u64>,
}

impl ProbeReport {
    fn new(name: &'static str, lease: Duration) -> Self {
        Self {
            name,
            outcome: Outcome::Passed,
            lease_ms: lease.as_millis() as u64,
            holder_token: None,
            waiter_token: None,
            freed_after_ms: None,
            stale_write_rejected: None,
            holder_told_lost_after_ms: None,
        }
    }

    fn finish(mut self, result: Result<(), String>) -> Self {
        if let Err(reason) = result {
            self.outcome = Outcome::Failed(reason);
        }
        self
    }
}

/// Starts a holder child (`lockkit __hold`, its stderr discarded) of `key`.
async fn start_holder(
    url: &str,
    key: &str,
    lease: Duration,
) -> Result<(HolderProcess, u64), String> {
    let mut command = crate::check::holder_command();
    command.stderr(Stdio::null());
    HolderProcess::start(command, url, key, lease).await
}

/// How long the waiter may wait: the lease, a session timeout or lock-delay the
/// backend adds (Consul's default is 15 s), and slack for a loaded machine.
fn waiter_budget(lease: Duration) -> Duration {
    lease * 3 + Duration::from_secs(40)
}

async fn waiter_lock(
    waiter: &Locker,
    key: &str,
    lease: Duration,
) -> Result<lockkit::LockGuard, String> {
    waiter
        .lock(key)
        .lease(Duration::from_secs(30))
        .wait(waiter_budget(lease))
        .await
        .map_err(|e| format!("the waiter did not get the lock: {e}"))
}

/// The waiter and an empty report, or the report of a skipped probe when holds are
/// process-local (no holder process could hold the lock).
async fn begin(
    url: &str,
    name: &'static str,
    lease: Duration,
) -> Result<Result<(Locker, ProbeReport), ProbeReport>, LockError> {
    let waiter = lockkit::connect(url).await?;
    let mut report = ProbeReport::new(name, lease);
    if !waiter.capabilities().cross_process {
        report.outcome =
            Outcome::Skipped("holds are process-local (no other process can hold)".into());
        return Ok(Err(report));
    }
    Ok(Ok((waiter, report)))
}

/// The stalled-holder probe on `url`, lock `key`.
pub(crate) async fn stalled_holder(
    url: &str,
    key: &str,
    lease: Duration,
) -> Result<ProbeReport, LockError> {
    let (waiter, mut report) = match begin(url, "stalled_holder", lease).await? {
        Ok(started) => started,
        Err(skipped) => return Ok(skipped),
    };
    let result = async {
        let (mut holder, holder_token) = start_holder(url, key, lease).await?;
        report.holder_token = Some(holder_token);
        // The resource the lock protects; the holder wrote to it while it held.
        let resource = FencedCell::new(0u64);
        resource
            .write(FencingToken(holder_token), |v| *v += 1)
            .map_err(|e| format!("the holder's first write was refused: {e}"))?;
        holder.stop()?;
        let stopped = Instant::now();
        let granted = waiter_lock(&waiter, key, lease).await;
        let freed_after = stopped.elapsed();
        let guard = match granted {
            Ok(g) => g,
            Err(e) => {
                let _ = holder.resume();
                holder.kill().await;
                return Err(e);
            }
        };
        report.freed_after_ms = Some(freed_after.as_millis() as u64);
        report.waiter_token = Some(guard.token().get());
        let write = resource.write(guard.token(), |v| *v += 1);
        // The holder wakes up and writes with the token it still has.
        holder.resume()?;
        let resumed = Instant::now();
        let stale = resource.write(FencingToken(holder_token), |v| *v += 1);
        report.stale_write_rejected = Some(stale.is_err());
        let told = timeout(waiter_budget(lease), holder.line(holder::LOST)).await;
        if let Ok(Some(_)) = told {
            report.holder_told_lost_after_ms = Some(resumed.elapsed().as_millis() as u64);
        }
        holder.kill().await;
        let released = guard.release().await;
        // The watchdog renews every third of the lease: when the holder stopped, at
        // least two thirds of it were left. Half is the bound, for clock slack.
        if freed_after < lease / 2 {
            return Err(format!(
                "the waiter got the lock {} after the holder stalled, before \
                 the holder's lease ({}, renewed every third) could have run out",
                lockkit_core::human_duration(freed_after),
                lockkit_core::human_duration(lease)
            ));
        }
        if guard_token_not_greater(holder_token, report.waiter_token) {
            return Err(format!(
                "the waiter's token {:?} is not greater than the stalled holder's {holder_token}",
                report.waiter_token
            ));
        }
        write.map_err(|e| format!("the waiter's write was refused: {e}"))?;
        if stale.is_ok() {
            return Err("the resource accepted the stalled holder's stale write".into());
        }
        match told {
            Ok(Some(_)) => {}
            Ok(None) => return Err("the resumed holder exited without reporting the loss".into()),
            Err(_) => return Err("the resumed holder never learned that it lost the lock".into()),
        }
        released.map_err(|e| format!("the waiter's release failed: {e}"))
    }
    .await;
    Ok(report.finish(result))
}

fn guard_token_not_greater(holder: u64, waiter: Option<u64>) -> bool {
    waiter.is_none_or(|w| w <= holder)
}

/// The killed-holder probe on `url`, lock `key`.
pub(crate) async fn killed_holder(
    url: &str,
    key: &str,
    lease: Duration,
) -> Result<ProbeReport, LockError> {
    let (waiter, mut report) = match begin(url, "killed_holder", lease).await? {
        Ok(started) => started,
        Err(skipped) => return Ok(skipped),
    };
    let result = async {
        let (holder, holder_token) = start_holder(url, key, lease).await?;
        report.holder_token = Some(holder_token);
        let killed = Instant::now();
        holder.kill().await;
        let guard = waiter_lock(&waiter, key, lease).await?;
        report.freed_after_ms = Some(killed.elapsed().as_millis() as u64);
        report.waiter_token = Some(guard.token().get());
        let released = guard.release().await;
        if guard_token_not_greater(holder_token, report.waiter_token) {
            return Err(format!(
                "the waiter's token {:?} is not greater than the killed holder's {holder_token}",
                report.waiter_token
            ));
        }
        released.map_err(|e| format!("the waiter's release failed: {e}"))
    }
    .await;
    Ok(report.finish(result))
}
