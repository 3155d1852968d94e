//! Fencing tokens and reentrancy.

use std::time::Duration;

use lockkit_core::driver::acquire;
use lockkit_core::{AcquireRequest, LockKey, OwnerId, Wait};

use super::expect_contended;
use crate::check::{CaseResult, ensure, fail};
use crate::harness::Ctx;

/// Tokens strictly increase across successive holders: after releases and (where
/// holds expire) after an expiry.
pub(crate) async fn fencing_tokens_increase_across_holders(ctx: &Ctx) -> CaseResult {
    let key = ctx.key("fenced");
    let mut tokens = Vec::new();
    for _ in 0..3 {
        let locker = ctx.locker().await?;
        let g = locker.try_lock(key.as_str()).await?;
        tokens.push(g.token());
        g.release().await?;
    }
    if ctx.capabilities().lease_expiry {
        let expiring = ctx.locker().await?;
        // Its first grant opens the driver's connection (over TLS, a handshake
        // that a loaded CI machine once took past 200 ms): not on the short lease.
        let warm = expiring.try_lock(key.as_str()).await?;
        tokens.push(warm.token());
        warm.release().await?;
        let g = expiring
            .lock(key.as_str())
            .lease(Duration::from_millis(200))
            .no_wait()
            .await?;
        tokens.push(g.token());
        let next = ctx.locker().await?;
        let g2 = next
            .lock(key.as_str())
            .lease(Duration::from_secs(10))
            .wait(Duration::from_secs(10))
            .await?;
        tokens.push(g2.token());
        drop(g);
        g2.release().await?;
    }
    ensure!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens did not strictly increase: {tokens:?}"
    );
    Ok(())
}

/// Re-acquiring with the same owner returns the same token and needs as many
/// releases as acquisitions; the driver itself treats a repeated acquire by the
/// holder as idempotent.
pub(crate) async fn reentrant_acquire_returns_same_token(ctx: &Ctx) -> CaseResult {
    let (a, b) = (ctx.locker().await?, ctx.locker().await?);
    let key = ctx.key("reentrant");
    let owner = OwnerId::new().with_label("conformance/reentrant");
    let g1 = a.lock(key.as_str()).owner(owner.clone()).no_wait().await?;
    let g2 = a.lock(key.as_str()).owner(owner.clone()).no_wait().await?;
    ensure!(
        g1.token() == g2.token(),
        "tokens differ: {} vs {}",
        g1.token(),
        g2.token()
    );
    ensure!(
        g2.hold_count() == 2,
        "hold count is {}, expected 2",
        g2.hold_count()
    );
    expect_contended(b.try_lock(key.as_str()).await, "while held twice")?;
    g1.release().await?;
    expect_contended(b.try_lock(key.as_str()).await, "after one of two releases")?;
    g2.release().await?;
    match b.try_lock(key.as_str()).await {
        Ok(g) => g.release().await?,
        Err(e) => fail!("still held after matching releases: {e}"),
    }

    let driver = ctx.harness.driver().await?;
    let key = LockKey::new(ctx.key("idempotent"))?;
    let req = AcquireRequest::new(
        key.clone(),
        owner.clone(),
        Duration::from_secs(10),
        Wait::NoWait,
    );
    let first = acquire(&*driver, &req).await?;
    let again = acquire(&*driver, &req).await?;
    ensure!(
        first.token == again.token,
        "a repeated driver acquire by the holder changed the token: {} → {}",
        first.token,
        again.token
    );
    ensure!(
        driver.release(&key, &owner).await?,
        "the holder's release found nothing"
    );
    Ok(())
}
