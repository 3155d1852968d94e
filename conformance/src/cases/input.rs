//! Bad input: typed errors, no panics, no harm to existing holds.

use std::time::Duration;

use lockkit_core::{LockError, MAX_KEY_LEN};

use super::expect_contended;
use crate::check::{CaseResult, ensure, fail};
use crate::harness::Ctx;

/// Empty, oversized, NUL- and newline-containing keys are refused with
/// `InvalidKey`; the longest valid key and non-ASCII keys work.
pub(crate) async fn invalid_keys_are_rejected(ctx: &Ctx) -> CaseResult {
    let locker = ctx.locker().await?;
    let bad = [
        String::new(),
        "x".repeat(MAX_KEY_LEN + 1),
        "nul\0inside".to_string(),
        "line\nbreak".to_string(),
    ];
    for key in bad {
        for r in [
            locker.try_lock(key.clone()).await,
            locker.lock(key.clone()).wait(Duration::from_secs(1)).await,
        ] {
            match r {
                Err(LockError::InvalidKey(e)) => {
                    ensure!(!e.to_string().is_empty(), "empty error message");
                }
                Err(e) => fail!("key {key:?}: expected InvalidKey, got: {e}"),
                Ok(_) => fail!("key {key:?} was accepted"),
            }
        }
    }
    let room = MAX_KEY_LEN - ctx.key("").len();
    let longest = ctx.key(&"x".repeat(room));
    ensure!(
        longest.len() == MAX_KEY_LEN,
        "the longest key is {} bytes",
        longest.len()
    );
    let g = locker.try_lock(longest).await?;
    g.release().await?;
    let g = locker.try_lock(ctx.key("склад:sku-42/€")).await?;
    g.release().await?;
    Ok(())
}

/// Zero, sub-minimum and absurd TTLs are refused with `InvalidTtl`, for acquire and
/// extend, and a refused extend leaves the hold intact.
pub(crate) async fn invalid_ttls_are_rejected(ctx: &Ctx) -> CaseResult {
    let (a, b) = (ctx.locker().await?, ctx.locker().await?);
    let key = ctx.key("ttl");
    for ttl in [
        Duration::ZERO,
        Duration::from_nanos(1),
        Duration::from_secs(3600 * 24 * 365 * 100),
        Duration::MAX,
    ] {
        for r in [
            a.lock(key.as_str()).ttl(ttl).no_wait().await,
            a.lock(key.as_str()).lease(ttl).no_wait().await,
        ] {
            match r {
                Err(LockError::InvalidTtl(_)) => {}
                Err(e) => fail!(
                    "TTL {}: expected InvalidTtl, got: {e}",
                    lockkit_core::human_duration(ttl)
                ),
                Ok(_) => fail!("TTL {} was accepted", lockkit_core::human_duration(ttl)),
            }
        }
    }
    let g = a.try_lock(key.as_str()).await?;
    for ttl in [Duration::ZERO, Duration::MAX] {
        match g.extend(ttl).await {
            Err(LockError::InvalidTtl(_)) => {}
            Err(e) => fail!(
                "extend({}): expected InvalidTtl, got: {e}",
                lockkit_core::human_duration(ttl)
            ),
            Ok(()) => fail!("extend({}) was accepted", lockkit_core::human_duration(ttl)),
        }
    }
    expect_contended(b.try_lock(key.as_str()).await, "after refused extends")?;
    g.release().await?;
    Ok(())
}
