//! Several keys at once ([`lockkit_core::Locker::lock_all`]): all or none, under
//! contention and cancellation; opposite orders never deadlock; a token per key;
//! the lost signal of any key.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lockkit_core::{LockError, Locker, LostReason};
use tokio::time::{Instant, timeout};

use crate::check::{CaseError, CaseResult, ensure, fail};
use crate::harness::Ctx;

/// Every one of `keys` is free now: another owner takes and gives back each.
async fn all_free(locker: &Locker, keys: &[&String], after: &str) -> CaseResult {
    for key in keys {
        match locker.try_lock(key.as_str()).await {
            Ok(g) => g.release().await?,
            Err(e) => fail!("{after}, `{key}` was still held: {e}"),
        }
    }
    Ok(())
}

/// With one key of the set held elsewhere, `lock_all` fails (no wait:
/// `Contended`; a bounded wait: `Timeout`) and leaves the other keys free; once
/// the key is free, the whole set is granted, and excludes others from each key.
pub(crate) async fn lock_all_is_all_or_none_under_contention(ctx: &Ctx) -> CaseResult {
    let (a, b, c) = (
        ctx.locker().await?,
        ctx.locker().await?,
        ctx.locker().await?,
    );
    let (k1, k2, k3) = (ctx.key("set-1"), ctx.key("set-2"), ctx.key("set-3"));
    let held = b.try_lock(k2.as_str()).await?;
    match a.lock_all([&k3, &k1, &k2]).no_wait().await {
        Err(LockError::Contended { .. }) => {}
        Err(e) => fail!("no wait on a set with a held key: expected Contended, got {e}"),
        Ok(_) => fail!("the set was granted while one of its keys was held"),
    }
    all_free(&c, &[&k1, &k3], "after a refused no-wait set").await?;
    match a
        .lock_all([&k3, &k1, &k2])
        .wait(Duration::from_millis(300))
        .await
    {
        Err(LockError::Timeout { .. }) => {}
        Err(e) => fail!("a bounded wait on a set with a held key: expected Timeout, got {e}"),
        Ok(_) => fail!("the set was granted while one of its keys was held"),
    }
    all_free(&c, &[&k1, &k3], "after a set's wait timed out").await?;
    held.release().await?;
    let set = a.lock_all([&k3, &k1, &k2]).no_wait().await?;
    for key in [&k1, &k2, &k3] {
        if let Ok(g) = c.try_lock(key.as_str()).await {
            fail!(
                "`{key}` was granted (token {}) while the set held it",
                g.token()
            );
        }
    }
    set.release().await?;
    all_free(&c, &[&k1, &k2, &k3], "after the set was released").await
}

/// A `lock_all` cancelled while it waits for its second key gives back the
/// first, and leaves the holder of the second alone.
pub(crate) async fn lock_all_is_all_or_none_under_cancellation(ctx: &Ctx) -> CaseResult {
    let (a, b, c) = (
        ctx.locker().await?,
        ctx.locker().await?,
        ctx.locker().await?,
    );
    let (k1, k2) = (ctx.key("cancel-1"), ctx.key("cancel-2"));
    let held = b.try_lock(k2.as_str()).await?;
    let waiting = {
        let (a, k1, k2) = (a.clone(), k1.clone(), k2.clone());
        tokio::spawn(async move { a.lock_all([k2, k1]).wait_forever().await.map(drop) })
    };
    // Wait until the set holds its first key (bounded: 10 s).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match c.try_lock(k1.as_str()).await {
            Err(LockError::Contended { .. }) => break,
            Ok(g) => g.release().await?,
            Err(e) => return Err(e.into()),
        }
        ensure!(
            Instant::now() < deadline,
            "the set never took its first key"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    ensure!(
        !waiting.is_finished(),
        "the set was granted while a key was held"
    );
    waiting.abort();
    let _ = waiting.await;
    match c.lock(k1.as_str()).wait(Duration::from_secs(5)).await {
        Ok(g) => g.release().await?,
        Err(e) => fail!("the cancelled set kept its first key: {e}"),
    }
    ensure!(
        !held.is_lost(),
        "the cancelled set disturbed the other key's holder"
    );
    held.release().await?;
    Ok(())
}

/// Two owners take the same two keys, named in opposite orders, many times over:
/// every round is granted (no deadlock), and their critical sections never
/// overlap.
pub(crate) async fn opposite_orders_never_deadlock(ctx: &Ctx) -> CaseResult {
    const ROUNDS: usize = 15;
    let (x, y) = (ctx.key("order-x"), ctx.key("order-y"));
    let inside = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for reversed in [false, true] {
        let locker = ctx.locker().await?;
        let keys = if reversed {
            [y.clone(), x.clone()]
        } else {
            [x.clone(), y.clone()]
        };
        let (inside, overlaps) = (inside.clone(), overlaps.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..ROUNDS {
                let set = locker
                    .lock_all(keys.clone())
                    .ttl(Duration::from_secs(10))
                    .wait(Duration::from_secs(20))
                    .await?;
                if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                tokio::task::yield_now().await;
                inside.fetch_sub(1, Ordering::SeqCst);
                set.release().await?;
            }
            Ok::<_, LockError>(())
        }));
    }
    for task in tasks {
        match timeout(Duration::from_secs(60), task).await {
            Ok(Ok(r)) => r?,
            Ok(Err(e)) => fail!("a task panicked: {e}"),
            Err(_) => fail!("the two sets deadlocked: a task did not finish in 60 s"),
        }
    }
    ensure!(
        overlaps.load(Ordering::SeqCst) == 0,
        "two sets sharing their keys were held at once"
    );
    Ok(())
}

/// The set has one token per key, each greater than the key's earlier holder's,
/// and a key named twice is taken once.
pub(crate) async fn lock_all_hands_out_a_token_per_key(ctx: &Ctx) -> CaseResult {
    let a = ctx.locker().await?;
    let (k1, k2) = (ctx.key("token-1"), ctx.key("token-2"));
    let before = a.try_lock(k1.as_str()).await?;
    let earlier = before.token();
    before.release().await?;
    let set = a.lock_all([&k2, &k1, &k2]).no_wait().await?;
    let keys: Vec<&str> = set.tokens().map(|(k, _)| k.as_str()).collect();
    ensure!(
        keys == [k1.as_str(), k2.as_str()],
        "the set holds {keys:?}, expected each key once, in order"
    );
    match set.token(k1.as_str()) {
        Some(t) if t > earlier => {}
        other => fail!("`{k1}`'s token in the set is {other:?}, not above {earlier}"),
    }
    ensure!(
        set.token("not-in-the-set").is_none(),
        "a token for a key not in the set"
    );
    set.release().await?;
    Ok(())
}

/// When one key's hold vanishes, the set's `lost()` fires with that key.
pub(crate) async fn lock_all_is_lost_when_any_key_is(ctx: &Ctx) -> CaseResult {
    let a = ctx.locker().await?;
    let (k1, k2) = (ctx.key("lost-1"), ctx.key("lost-2"));
    let ttl = Duration::from_millis(900);
    let set = a.lock_all([&k1, &k2]).ttl(ttl).no_wait().await?;
    let lost = set.lost();
    let Some(second) = set.guards().get(1) else {
        fail!("the set holds fewer than two keys");
    };
    ctx.vanish(second.key()).await?;
    let (key, reason) = match timeout(ttl * 3, lost).await {
        Ok(lost) => lost,
        Err(_) => fail!("the set's lost() did not fire within 3×TTL of a key vanishing"),
    };
    ensure!(
        key.as_str() == k2.as_str(),
        "lost() named `{key}`, not the vanished `{k2}`"
    );
    ensure!(
        reason != LostReason::Expired,
        "lost() fired by deadline expiry, not because the loss was detected"
    );
    ensure!(set.is_lost(), "the set does not report lost");
    match set.release().await {
        Err(LockError::Lost { .. }) => Ok(()),
        Ok(()) => Err(CaseError::Failed(
            "releasing a set with a vanished key reported success".into(),
        )),
        Err(e) => fail!("expected Lost from the set's release, got: {e}"),
    }
}
