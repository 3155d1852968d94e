//! Leases: expiry, extension, and releases that must not touch newer holders.

use std::time::Duration;

use lockkit_core::LockError;
use tokio::time::{Instant, sleep_until};

use super::{expect_contended, reference_op, tolerance};
use crate::check::{CaseResult, ensure, fail};
use crate::harness::Ctx;

/// A fixed lease that is not released becomes free at its TTL: not before, and soon
/// after; the next holder's token is greater.
pub(crate) async fn expired_lease_is_reacquirable(ctx: &Ctx) -> CaseResult {
    ctx.require_lease_expiry()?;
    let (a, b) = (ctx.locker().await?, ctx.locker().await?);
    let reference = reference_op(ctx, &b).await?;
    let key = ctx.key("lease");
    let ttl = Duration::from_millis(600);
    let requested = Instant::now();
    let ga = a.lock(key.as_str()).lease(ttl).no_wait().await?;
    expect_contended(b.try_lock(key.as_str()).await, "during the lease")?;
    let gb = b
        .lock(key.as_str())
        .lease(Duration::from_secs(10))
        .wait(ttl * 4 + Duration::from_secs(5))
        .await?;
    let after = requested.elapsed();
    ensure!(
        after >= ttl,
        "re-acquired {} after the first request, before its TTL of {}",
        lockkit_core::human_duration(after),
        lockkit_core::human_duration(ttl)
    );
    let limit = ttl + tolerance(Duration::from_millis(700), reference);
    ensure!(
        after <= limit,
        "re-acquired only {} after the first request (limit {})",
        lockkit_core::human_duration(after),
        lockkit_core::human_duration(limit)
    );
    ensure!(
        gb.token() > ga.token(),
        "the next holder's token {} is not greater than the expired holder's {}",
        gb.token(),
        ga.token()
    );
    drop(ga);
    gb.release().await?;
    Ok(())
}

/// After A's lease expires and B takes the lock, A's release reports `Lost` and
/// leaves B's hold in place.
pub(crate) async fn release_never_deletes_a_newer_holders_lock(ctx: &Ctx) -> CaseResult {
    ctx.require_lease_expiry()?;
    let (a, b, c) = (
        ctx.locker().await?,
        ctx.locker().await?,
        ctx.locker().await?,
    );
    let key = ctx.key("lease");
    let ga = a
        .lock(key.as_str())
        .lease(Duration::from_millis(300))
        .no_wait()
        .await?;
    let gb = b
        .lock(key.as_str())
        .lease(Duration::from_secs(10))
        .wait(Duration::from_secs(10))
        .await?;
    match ga.release().await {
        Err(LockError::Lost { .. }) => {}
        Ok(()) => fail!("releasing an expired hold reported success"),
        Err(e) => fail!("expected Lost from the stale release, got: {e}"),
    }
    expect_contended(c.try_lock(key.as_str()).await, "after the stale release")?;
    if let Err(e) = gb.extend(Duration::from_secs(10)).await {
        fail!("the newer holder could not extend after the stale release: {e}");
    }
    gb.release().await?;
    Ok(())
}

/// A's hold vanishes behind its back (deleted, or its session ended); B takes the
/// lock; A's late release reports `Lost` and leaves B's hold in place, and B's
/// token is greater. The same promise as the case above, for every driver,
/// including those whose holds have no lease to expire.
pub(crate) async fn release_after_the_hold_vanished_never_touches_the_new_holder(
    ctx: &Ctx,
) -> CaseResult {
    let (a, b, c) = (
        ctx.locker().await?,
        ctx.locker().await?,
        ctx.locker().await?,
    );
    let key = ctx.key("vanished");
    let old = a
        .lock(key.as_str())
        .ttl(Duration::from_millis(600))
        .no_wait()
        .await?;
    let old_token = old.token();
    ctx.vanish(old.key()).await?;
    let new = b
        .lock(key.as_str())
        .ttl(Duration::from_secs(10))
        .wait(Duration::from_secs(10))
        .await?;
    match old.release().await {
        Err(LockError::Lost { .. }) => {}
        Ok(()) => fail!("releasing a vanished hold reported success"),
        Err(e) => fail!("expected Lost from the stale release, got: {e}"),
    }
    expect_contended(c.try_lock(key.as_str()).await, "after the stale release")?;
    ensure!(
        new.token() > old_token,
        "the new holder's token {} is not greater than the vanished hold's {old_token}",
        new.token()
    );
    if let Err(e) = new.extend(Duration::from_secs(10)).await {
        fail!("the new holder could not extend after the stale release: {e}");
    }
    new.release().await?;
    Ok(())
}

/// `extend` keeps a fixed lease alive past its original TTL; once the hold vanishes,
/// `extend` fails with `Lost`.
pub(crate) async fn extend_keeps_the_lock_and_fails_after_loss(ctx: &Ctx) -> CaseResult {
    let (a, b) = (ctx.locker().await?, ctx.locker().await?);
    let key = ctx.key("lease");
    let ttl = Duration::from_millis(400);
    let requested = Instant::now();
    let g = a.lock(key.as_str()).lease(ttl).no_wait().await?;
    g.extend(Duration::from_secs(5)).await?;
    sleep_until(requested + ttl + Duration::from_millis(200)).await;
    expect_contended(b.try_lock(key.as_str()).await, "past the original lease")?;
    ensure!(
        !g.is_lost(),
        "the guard reports lost after a successful extend"
    );
    ctx.vanish(&g.key().clone()).await?;
    match g.extend(Duration::from_secs(1)).await {
        Err(LockError::Lost { .. }) => {}
        Ok(()) => fail!("extend succeeded after the hold vanished"),
        Err(e) => fail!("expected Lost from extend after the hold vanished, got: {e}"),
    }
    ensure!(
        g.is_lost(),
        "the guard does not report lost after extend said Lost"
    );
    drop(g);
    Ok(())
}
