//! Several keys in one request ([`lockkit_core::LockDriver::try_acquire_all`]),
//! where the driver claims it: all or none, a token per key above the key's
//! last, and holds that exclude others as any hold does.

use std::time::Duration;

use lockkit_core::{AcquireRequest, LockKey, OwnerId, Wait};

use super::expect_contended;
use crate::check::{CaseResult, ensure, fail};
use crate::harness::Ctx;

/// With one key of the set held elsewhere, the request takes nothing and
/// leaves the other key free; with both free it grants both, each with a token
/// above the key's last, and each excludes others until released.
pub(crate) async fn several_free_keys_are_taken_at_once_or_not_at_all(ctx: &Ctx) -> CaseResult {
    let (other, observer) = (ctx.locker().await?, ctx.locker().await?);
    let driver = ctx.harness.driver().await?;
    let (k1, k2) = (ctx.key("once-1"), ctx.key("once-2"));
    let earlier = observer.try_lock(k1.as_str()).await?;
    let last = earlier.token();
    earlier.release().await?;

    let owner = OwnerId::new();
    let request = |key: &String| -> Result<AcquireRequest, lockkit_core::LockError> {
        let ttl = Duration::from_secs(10);
        Ok(AcquireRequest::new(
            LockKey::new(key.as_str())?,
            owner.clone(),
            ttl,
            Wait::NoWait,
        ))
    };
    let reqs = [request(&k1)?, request(&k2)?];

    let held = other.try_lock(k2.as_str()).await?;
    if let Some(grants) = driver.try_acquire_all(&reqs).await? {
        fail!(
            "granted {} keys while `{k2}` was held elsewhere",
            grants.len()
        );
    }
    match observer.try_lock(k1.as_str()).await {
        Ok(g) => g.release().await?,
        Err(e) => fail!("a refused set left `{k1}` taken: {e}"),
    }
    held.release().await?;

    let Some(grants) = driver.try_acquire_all(&reqs).await? else {
        fail!("two free keys were refused");
    };
    ensure!(
        grants.len() == 2 && grants.iter().zip(&reqs).all(|(g, r)| g.key == r.key),
        "expected a grant per key, in order; got {:?}",
        grants.iter().map(|g| g.key.as_str()).collect::<Vec<_>>()
    );
    ensure!(
        grants[0].token > last,
        "`{k1}`'s token {} is not above its last, {last}",
        grants[0].token
    );
    for key in [&k1, &k2] {
        expect_contended(observer.try_lock(key.as_str()).await, "a key taken at once")?;
    }
    for req in &reqs {
        ensure!(
            driver.release(&req.key, &owner).await?,
            "the release of `{}` found no hold",
            req.key
        );
    }
    for key in [&k1, &k2] {
        observer.try_lock(key.as_str()).await?.release().await?;
    }
    Ok(())
}
