//! A holder process killed with SIGKILL.

use std::time::Duration;

use tokio::time::Instant;

use super::{expect_contended, reference_op, tolerance};
use crate::check::{CaseError, CaseResult, ensure};
use crate::harness::Ctx;
use crate::holder::HolderProcess;

/// A child process holding the lock `key` with the watchdog TTL `ttl`, and its
/// token; the case is skipped where holds are process-local or the harness
/// cannot start a child.
pub(crate) async fn outside_holder(
    ctx: &Ctx,
    key: &str,
    ttl: Duration,
) -> Result<(HolderProcess, u64), CaseError> {
    if !ctx.capabilities().cross_process {
        return Err(CaseError::Skipped("holds are process-local".into()));
    }
    let (Some(url), Some(command)) = (ctx.harness.holder_url(), ctx.holder.as_ref()) else {
        return Err(CaseError::Skipped(
            "the harness cannot start a holder process".into(),
        ));
    };
    HolderProcess::start(command(), &url, key, ttl)
        .await
        .map_err(CaseError::Failed)
}

/// A child process takes the lock (with the watchdog) and is killed with SIGKILL;
/// the lock is refused while it lives and renews, and is free within one TTL of the
/// kill, with a greater token. The TTL is the lease the backend granted (etcd
/// raises a 1 s lease to 2 s under its default flags), which the child reports.
pub(crate) async fn abandoned_by_killed_process_is_freed_after_ttl(ctx: &Ctx) -> CaseResult {
    let b = ctx.locker().await?;
    let key = ctx.key("abandoned");
    let ttl = Duration::from_millis(1000);
    let (child, child_token) = outside_holder(ctx, &key, ttl).await?;
    let reference = reference_op(ctx, &b).await?;
    let child_ttl = child.effective_ttl();
    expect_contended(b.try_lock(key.as_str()).await, "while the holder lives")?;
    // Past one TTL the child must still hold: its watchdog renews.
    tokio::time::sleep(ttl + ttl / 2).await;
    expect_contended(
        b.try_lock(key.as_str()).await,
        "1.5×TTL in, while the holder renews",
    )?;

    let granted = child_ttl.max(ttl);
    let limit = granted + tolerance(Duration::from_millis(700), reference);
    let killed = Instant::now();
    child.kill().await;
    let g = b
        .lock(key.as_str())
        .lease(Duration::from_secs(10))
        .wait(limit + Duration::from_secs(5))
        .await?;
    let after = killed.elapsed();
    ensure!(
        after <= limit,
        "freed {} after the kill; limit {} (the backend's lease: {})",
        lockkit_core::human_duration(after),
        lockkit_core::human_duration(limit),
        lockkit_core::human_duration(granted)
    );
    ensure!(
        g.token().get() > child_token,
        "token {} after the kill is not greater than the dead holder's {child_token}",
        g.token()
    );
    g.release().await?;
    Ok(())
}
