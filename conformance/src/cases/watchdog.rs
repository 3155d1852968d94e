//! The watchdog and the lost signal.

use std::time::Duration;

use futures_util::FutureExt;
use lockkit_core::{LockError, LostReason};
use tokio::time::{Instant, sleep, timeout};

use super::expect_contended;
use crate::check::{CaseResult, ensure, fail};
use crate::harness::Ctx;

/// With no fixed lease, the watchdog keeps the lock held for 3× its TTL: another
/// client is refused throughout, the lost signal stays quiet, and release succeeds.
pub(crate) async fn watchdog_keeps_lock_past_ttl(ctx: &Ctx) -> CaseResult {
    let (a, b) = (ctx.locker().await?, ctx.locker().await?);
    let key = ctx.key("watched");
    let ttl = Duration::from_millis(600);
    let started = Instant::now();
    let g = a.lock(key.as_str()).ttl(ttl).no_wait().await?;
    let mut lost = Box::pin(g.lost());
    let mut checks = 0;
    let mut last_check = Duration::ZERO;
    while started.elapsed() < ttl * 3 {
        sleep(ttl / 4).await;
        expect_contended(b.try_lock(key.as_str()).await, "while the watchdog renews")?;
        if let Some(reason) = lost.as_mut().now_or_never() {
            fail!(
                "lost fired after {:?} while renewing: {reason}",
                started.elapsed()
            );
        }
        checks += 1;
        last_check = started.elapsed();
    }
    // A lapsed lease is not taken back by anyone, so any later check would see it:
    // what matters is that the checks reach well past the TTL (on a slow backend
    // they are fewer, not less telling).
    ensure!(
        checks >= 3 && last_check >= ttl * 2,
        "{checks} checks, the last after {last_check:?}: not enough to cover 2×TTL ({:?})",
        ttl * 2
    );
    if let Err(e) = g.release().await {
        fail!("release after 3×TTL failed; the watchdog did not keep the hold: {e}");
    }
    match b.try_lock(key.as_str()).await {
        Ok(g) => g.release().await?,
        Err(e) => fail!("not free after release: {e}"),
    }
    Ok(())
}

/// When the hold vanishes behind the holder's back, `lost()` fires within one TTL
/// (at the next renewal, or sooner where the backend notifies), not by expiry.
pub(crate) async fn lost_signal_fires_when_hold_disappears(ctx: &Ctx) -> CaseResult {
    let a = ctx.locker().await?;
    let key = ctx.key("vanishing");
    let ttl = Duration::from_millis(900);
    let g = a.lock(key.as_str()).ttl(ttl).no_wait().await?;
    let lost = g.lost();
    let vanished = Instant::now();
    ctx.vanish(g.key()).await?;
    let reason = match timeout(ttl * 3, lost).await {
        Ok(reason) => reason,
        Err(_) => fail!("lost() did not fire within 3×TTL of the hold vanishing"),
    };
    let after = vanished.elapsed();
    ensure!(
        after <= ttl,
        "lost() fired {} after the hold vanished; limit one TTL ({})",
        lockkit_core::human_duration(after),
        lockkit_core::human_duration(ttl)
    );
    ensure!(
        reason != LostReason::Expired,
        "lost() fired by deadline expiry, not because the loss was detected"
    );
    ensure!(g.is_lost(), "the guard does not report lost");
    match g.release().await {
        Err(LockError::Lost { .. }) => {}
        Ok(()) => fail!("release of a vanished hold reported success"),
        Err(e) => fail!("expected Lost from release, got: {e}"),
    }
    Ok(())
}
