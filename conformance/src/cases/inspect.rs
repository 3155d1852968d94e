//! Inspection: who holds a key, in which mode, with which token, for how long, and
//! how many wait. For drivers that inspect ([`lockkit_core::Capabilities::inspect`]).

use std::time::Duration;

use lockkit_core::{Holder, LockMode};

use super::waiters::{Log, Waiter, take, until_granted};
use crate::check::{CaseResult, ensure};
use crate::harness::Ctx;

const LIMIT: Duration = Duration::from_secs(10);
const LABEL: &str = "conformance/inspected";

/// Checks one holder against what its guard says.
fn check_holder(h: &Holder, mode: LockMode, token: u64, lease: Duration, what: &str) -> CaseResult {
    ensure!(h.mode == mode, "{what}: mode {} shown, {mode} held", h.mode);
    ensure!(
        h.token.get() == token,
        "{what}: token {} shown, {token} held",
        h.token
    );
    if let Some(left) = h.remaining {
        ensure!(
            left > Duration::ZERO && left <= lease,
            "{what}: {left:?} of lease shown left, of {lease:?}"
        );
    }
    ensure!(
        h.label.as_deref() == Some(LABEL),
        "{what}: label {:?} shown, {LABEL:?} set",
        h.label
    );
    Ok(())
}

/// A labelled exclusive holder is shown with its mode, token, lease left and label
/// (and `is_locked` says so); where the driver has them, two readers are shown as
/// two shared holders, and two permits with their limit.
pub(crate) async fn inspection_shows_holder_mode_token_and_lease(ctx: &Ctx) -> CaseResult {
    let locker = ctx.locker().await?.with_label(LABEL);
    let key = ctx.key("inspected");
    let ttl = Duration::from_secs(10);
    let g = locker.lock(key.as_str()).ttl(ttl).no_wait().await?;
    let lease = g.effective_ttl().max(ttl);
    let seen = ctx.inspect(&key).await?;
    ensure!(
        seen.holders.len() == 1,
        "one holder, {} shown",
        seen.holders.len()
    );
    check_holder(
        &seen.holders[0],
        LockMode::Exclusive,
        g.token().get(),
        lease,
        "a lock",
    )?;
    ensure!(
        locker.is_locked(key.as_str()).await?,
        "is_locked says no while held"
    );
    g.release().await?;

    let caps = ctx.capabilities();
    let mut modes = Vec::new();
    if caps.shared {
        modes.push(LockMode::Shared);
    }
    if caps.permits {
        modes.push(LockMode::Permit { limit: 3 });
    }
    for mode in modes {
        let key = ctx.key(if mode == LockMode::Shared {
            "inspected-shared"
        } else {
            "inspected-permits"
        });
        let other = ctx.locker().await?.with_label(LABEL);
        let a = take(&locker, &key, mode, None).await?;
        let b = take(&other, &key, mode, None).await?;
        let mut shown = ctx.inspect(&key).await?.holders;
        shown.sort_by_key(|h| h.token);
        ensure!(
            shown.len() == 2,
            "two {mode} holders, {} shown",
            shown.len()
        );
        for (h, g) in shown.iter().zip([&a, &b]) {
            check_holder(h, mode, g.token().get(), lease, &format!("a {mode} hold"))?;
        }
        a.release().await?;
        b.release().await?;
    }
    Ok(())
}

/// A key nobody ever took, and a key whose holder released, are shown free.
pub(crate) async fn a_free_key_inspects_empty(ctx: &Ctx) -> CaseResult {
    let locker = ctx.locker().await?;
    let never = ctx.key("never-taken");
    let seen = ctx.inspect(&never).await?;
    ensure!(
        seen.holders.is_empty() && seen.waiters.is_none_or(|n| n == 0),
        "a key never taken shows {seen:?}"
    );
    let key = ctx.key("released");
    locker.try_lock(key.as_str()).await?.release().await?;
    let seen = ctx.inspect(&key).await?;
    ensure!(
        seen.holders.is_empty(),
        "a released key shows holders {:?}",
        seen.holders
    );
    ensure!(
        !locker.is_locked(key.as_str()).await?,
        "is_locked says yes after the release"
    );
    Ok(())
}

/// Two acquires wait behind a holder and the backend counts them; as the lock
/// passes along, the count goes down.
pub(crate) async fn inspection_counts_waiters(ctx: &Ctx) -> CaseResult {
    let holder = ctx.locker().await?;
    let key = ctx.key("counted");
    let held = holder.try_lock(key.as_str()).await?;
    let log = Log::default();
    let w1 = Waiter::start(ctx, &key, "w1", LockMode::Exclusive, &log).await?;
    let w2 = Waiter::start(ctx, &key, "w2", LockMode::Exclusive, &log).await?;
    ctx.until_queued(&key, 2, LIMIT).await?;
    held.release().await?;
    let first = super::waiters::until_count(&log, 1, LIMIT, "after the release").await?;
    ctx.until_queued(&key, 1, LIMIT).await?;
    let (first, second) = if first == ["w1"] { (w1, w2) } else { (w2, w1) };
    first.release().await?;
    until_granted(&log, &["w1", "w2"], LIMIT, "after the second release").await?;
    ctx.until_queued(&key, 0, LIMIT).await?;
    second.release().await
}

/// `list` names exactly the held locks under a prefix, each with its holder's
/// token; a released lock leaves the listing; `limit` bounds it.
pub(crate) async fn held_locks_are_listed_by_prefix(ctx: &Ctx) -> CaseResult {
    let locker = ctx.locker().await?.with_label(LABEL);
    let (a, b) = (ctx.key("listed/a"), ctx.key("listed/b"));
    let prefix = a.trim_end_matches('a').to_owned();
    let ga = locker.lock(a.as_str()).ttl(LIMIT).no_wait().await?;
    let gb = locker.lock(b.as_str()).ttl(LIMIT).no_wait().await?;
    let other = locker
        .lock(ctx.key("unlisted"))
        .ttl(LIMIT)
        .no_wait()
        .await?;
    let seen = locker.list(&prefix, 100).await?;
    let shown: Vec<(&str, Option<u64>)> = seen
        .iter()
        .map(|s| (s.key.as_str(), s.holders.first().map(|h| h.token.get())))
        .collect();
    let want = [
        (a.as_str(), Some(ga.token().get())),
        (b.as_str(), Some(gb.token().get())),
    ];
    ensure!(
        shown == want,
        "listed {shown:?} under {prefix:?}; held {want:?}"
    );
    let one = locker.list(&prefix, 1).await?;
    ensure!(one.len() == 1, "a limit of 1 listed {}", one.len());
    ga.release().await?;
    let seen = locker.list(&prefix, 100).await?;
    let shown: Vec<&str> = seen.iter().map(|s| s.key.as_str()).collect();
    ensure!(
        shown == [b.as_str()],
        "after releasing {a:?}, listed {shown:?}"
    );
    gb.release().await?;
    other.release().await?;
    Ok(())
}
