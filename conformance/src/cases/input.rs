//! Bad input: typed errors, no panics, no harm to existing holds.

use std::time::Duration;

use lockkit_core::{Inspect, LockError, MAX_KEY_LEN};

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

/// Keys, owner labels and election values in any Unicode text, emoji included,
/// whatever the backend's own default character set: taken, excluding, released
/// at once (another owner takes the key without waiting), and read back
/// unchanged where the driver inspects.
pub(crate) async fn unicode_keys_labels_and_values_round_trip(ctx: &Ctx) -> CaseResult {
    const LABEL: &str = "работник/工人/🔒";
    const VALUE: &str = "領導者/🎉/é";
    let caps = ctx.capabilities();
    let inspects = caps.inspect != Inspect::No;
    let a = ctx.locker().await?.with_label(LABEL);
    let b = ctx.locker().await?;
    let key = ctx.key("orders/🔒/склад");
    let held = a.try_lock(key.as_str()).await?;
    expect_contended(b.try_lock(key.as_str()).await, "an emoji key held")?;
    if inspects {
        let seen = b.inspect(key.as_str()).await?;
        let holder = seen.holders.first();
        ensure!(
            holder.is_some_and(|h| h.token == held.token()),
            "inspect shows {:?}, not token {}",
            seen.holders,
            held.token()
        );
        let label = holder.and_then(|h| h.label.as_deref());
        ensure!(
            label.is_none_or(|l| l == LABEL),
            "the label read back as {label:?}"
        );
    }
    held.release().await?;
    b.try_lock(key.as_str()).await?.release().await?;
    if caps.permits {
        let (sa, sb) = (
            a.semaphore(ctx.key("pool/🔒"), 1),
            b.semaphore(ctx.key("pool/🔒"), 1),
        );
        let permit = sa.try_acquire().await?;
        expect_contended(sb.try_acquire().await, "an emoji semaphore's one permit")?;
        permit.release().await?;
        sb.try_acquire().await?.release().await?;
    }
    let name = ctx.key("leader/👑");
    let lead = a.election(name.as_str()).campaign(VALUE).await?;
    if inspects {
        let leader = b.election(name.as_str()).leader().await?;
        let value = leader.as_ref().and_then(|l| l.value.as_deref());
        ensure!(
            value == Some(VALUE),
            "the leader's value read back as {value:?}"
        );
    }
    lead.resign().await?;
    Ok(())
}
