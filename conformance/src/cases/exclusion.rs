//! Mutual exclusion, waiting, time-outs and cancellation.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use lockkit_core::LockError;
use tokio::time::{Instant, timeout};

use super::{expect_contended, reference_op, tolerance};
use crate::check::{CaseError, CaseResult, ensure, fail};
use crate::harness::Ctx;

/// N tasks × M rounds, each with its own driver, increment a counter with a
/// non-atomic read-pause-write under the lock. Any overlap loses an increment, and is
/// also caught directly by an "inside" counter; tokens seen inside the critical
/// section must strictly increase.
pub(crate) async fn mutual_exclusion_under_contention(ctx: &Ctx) -> CaseResult {
    const TASKS: usize = 4;
    const ROUNDS: usize = 10;
    let key = ctx.key("counter");
    let counter = Arc::new(AtomicU64::new(0));
    let inside = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let last_token = Arc::new(AtomicU64::new(0));
    let token_regressions = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let locker = ctx.locker().await?;
        let (key, counter, inside, overlaps) = (
            key.clone(),
            counter.clone(),
            inside.clone(),
            overlaps.clone(),
        );
        let (last_token, token_regressions) = (last_token.clone(), token_regressions.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..ROUNDS {
                let guard = locker
                    .lock(key.as_str())
                    .ttl(Duration::from_secs(10))
                    .wait(Duration::from_secs(60))
                    .await?;
                if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                let token = guard.token().get();
                if token <= last_token.swap(token, Ordering::SeqCst) {
                    token_regressions.fetch_add(1, Ordering::SeqCst);
                }
                let seen = counter.load(Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(1)).await;
                counter.store(seen + 1, Ordering::SeqCst);
                inside.fetch_sub(1, Ordering::SeqCst);
                guard.release().await?;
            }
            Ok::<_, LockError>(())
        }));
    }
    for task in tasks {
        match task.await {
            Ok(r) => r?,
            Err(e) => fail!("a contender task panicked: {e}"),
        }
    }
    let total = counter.load(Ordering::SeqCst);
    let expected = (TASKS * ROUNDS) as u64;
    ensure!(
        overlaps.load(Ordering::SeqCst) == 0,
        "{} critical sections overlapped",
        overlaps.load(Ordering::SeqCst)
    );
    ensure!(
        total == expected,
        "counter is {total}, expected {expected}: increments were lost"
    );
    ensure!(
        token_regressions.load(Ordering::SeqCst) == 0,
        "a holder saw a token not greater than the previous holder's"
    );
    Ok(())
}

/// Holding one key does not block another.
pub(crate) async fn independent_keys_do_not_block_each_other(ctx: &Ctx) -> CaseResult {
    let (a, b) = (ctx.locker().await?, ctx.locker().await?);
    let ga = a.try_lock(ctx.key("one")).await?;
    let gb = match b.try_lock(ctx.key("two")).await {
        Ok(g) => g,
        Err(e) => fail!("holding `one` blocked `two`: {e}"),
    };
    expect_contended(b.try_lock(ctx.key("one")).await, "the held key")?;
    ga.release().await?;
    gb.release().await?;
    Ok(())
}

/// `try_lock` on a held lock answers `Contended` about as fast as an uncontended
/// round trip, without waiting.
pub(crate) async fn try_lock_fails_fast_when_held(ctx: &Ctx) -> CaseResult {
    let (a, b) = (ctx.locker().await?, ctx.locker().await?);
    let reference = reference_op(ctx, &b).await?;
    let key = ctx.key("busy");
    let ga = a.try_lock(key.as_str()).await?;
    let started = Instant::now();
    let r = b.try_lock(key.as_str()).await;
    let took = started.elapsed();
    expect_contended(r, "try_lock on a held lock")?;
    let limit = tolerance(Duration::from_millis(200), reference);
    ensure!(
        took <= limit,
        "try_lock took {} to fail (limit {}, reference round trip {})",
        lockkit_core::human_duration(took),
        lockkit_core::human_duration(limit),
        lockkit_core::human_duration(reference)
    );
    ga.release().await?;
    Ok(())
}

/// A bounded wait on a held lock ends with `Timeout`: not before the wait, and not
/// much after it.
pub(crate) async fn acquire_times_out(ctx: &Ctx) -> CaseResult {
    let (a, b) = (ctx.locker().await?, ctx.locker().await?);
    let reference = reference_op(ctx, &b).await?;
    let key = ctx.key("busy");
    let ga = a.try_lock(key.as_str()).await?;
    let wait = Duration::from_millis(500);
    let started = Instant::now();
    let r = b.lock(key.as_str()).wait(wait).await;
    let took = started.elapsed();
    match r {
        Err(LockError::Timeout { .. }) => {}
        Err(e) => fail!("expected Timeout, got: {e}"),
        Ok(_) => fail!("the lock was granted while held"),
    }
    ensure!(
        took >= wait,
        "gave up after {}, before the wait of {}",
        lockkit_core::human_duration(took),
        lockkit_core::human_duration(wait)
    );
    let limit = wait + tolerance(Duration::from_millis(300), reference);
    ensure!(
        took <= limit,
        "gave up after {}; limit {}",
        lockkit_core::human_duration(took),
        lockkit_core::human_duration(limit)
    );
    ga.release().await?;
    Ok(())
}

/// A waiting acquire that is dropped leaves no hold and no queue entry; and acquires
/// cancelled at every point of their flight leave nothing that outlives the
/// background release.
pub(crate) async fn cancelled_acquire_leaves_nothing_behind(ctx: &Ctx) -> CaseResult {
    let (a, b, c) = (
        ctx.locker().await?,
        ctx.locker().await?,
        ctx.locker().await?,
    );
    // 1. Cancel while waiting.
    let key = ctx.key("waited");
    let ga = a.try_lock(key.as_str()).await?;
    if timeout(
        Duration::from_millis(200),
        b.lock(key.as_str()).wait_forever(),
    )
    .await
    .is_ok()
    {
        fail!("the waiting acquire completed while the lock was held");
    }
    ga.release().await?;
    if let Err(e) = c.lock(key.as_str()).wait(Duration::from_secs(3)).await {
        fail!(
            "after the waiter was cancelled and the holder released, the lock stayed unavailable: {e}"
        );
    }
    // 2. Cancel mid-flight on a free lock, at increasing delays.
    let key = ctx.key("in-flight");
    for i in 0..50u64 {
        let attempt = b
            .lock(key.as_str())
            .lease(Duration::from_secs(60))
            .no_wait();
        let _ = timeout(Duration::from_micros(i * 200), attempt).await;
    }
    match c.lock(key.as_str()).wait(Duration::from_secs(5)).await {
        Ok(g) => g.release().await?,
        Err(e) => {
            return Err(CaseError::Failed(format!(
                "a cancelled acquire left a hold behind (60 s lease): {e}"
            )));
        }
    }
    Ok(())
}
