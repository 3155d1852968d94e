//! Counting semaphores: at most `limit` permits at once, each leased, fenced and
//! freed like a lock. For drivers with permits
//! ([`lockkit_core::Capabilities::permits`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lockkit_core::{LockError, LockMode};
use tokio::time::Instant;

use super::waiters::{Log, Waiter, take, until_count, until_granted};
use super::{expect_contended, reference_op, tolerance};
use crate::check::{CaseError, CaseResult, ensure, fail};
use crate::harness::Ctx;
use crate::holder::HolderProcess;

const LIMIT: Duration = Duration::from_secs(10);

/// Six tasks, each on its own driver, take a permit of a 3-permit semaphore five
/// times each; inside, a shared counter of holders never goes past 3.
pub(crate) async fn at_most_limit_permits_under_contention(ctx: &Ctx) -> CaseResult {
    const PERMITS: u32 = 3;
    const TASKS: usize = 6;
    const ROUNDS: usize = 5;
    let key = ctx.key("pool");
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let locker = ctx.locker().await?;
        let (key, inside, most) = (key.clone(), inside.clone(), most.clone());
        tasks.push(tokio::spawn(async move {
            let pool = locker.semaphore(key, PERMITS);
            for _ in 0..ROUNDS {
                let permit = pool
                    .acquire()
                    .ttl(Duration::from_secs(10))
                    .wait(Duration::from_secs(60))
                    .await?;
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                // The work done under the permit: long beside a round trip, so
                // every free permit is contended while it runs.
                tokio::time::sleep(Duration::from_millis(20)).await;
                inside.fetch_sub(1, Ordering::SeqCst);
                permit.release().await?;
            }
            Ok::<_, LockError>(())
        }));
    }
    for task in tasks {
        match tokio::time::timeout(Duration::from_secs(120), task).await {
            Ok(Ok(r)) => r?,
            Ok(Err(e)) => fail!("a task panicked: {e}"),
            Err(_) => fail!("the tasks did not finish within 120 s"),
        }
    }
    let most = most.load(Ordering::SeqCst);
    ensure!(
        most <= PERMITS as usize,
        "{most} permits were held at once; the limit is {PERMITS}"
    );
    Ok(())
}

/// Three permits of a 3-permit semaphore are taken at once, each with a token
/// greater than the last; a fourth is refused; a permit released and taken again
/// gets a greater token still.
pub(crate) async fn permit_tokens_increase_across_permits(ctx: &Ctx) -> CaseResult {
    let key = ctx.key("tokens");
    let mut lockers = Vec::new();
    for _ in 0..4 {
        lockers.push(ctx.locker().await?);
    }
    let mut permits = Vec::new();
    for l in &lockers[..3] {
        permits.push(l.semaphore(key.as_str(), 3).try_acquire().await?);
    }
    let tokens: Vec<u64> = permits.iter().map(|p| p.token().get()).collect();
    ensure!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens of successive permits did not increase: {tokens:?}"
    );
    expect_contended(
        lockers[3].semaphore(key.as_str(), 3).try_acquire().await,
        "a fourth permit of three",
    )?;
    let middle = permits.remove(1);
    middle.release().await?;
    let again = lockers[3].semaphore(key.as_str(), 3).try_acquire().await?;
    ensure!(
        again.token().get() > tokens[2],
        "a permit taken after a release got token {}, not above {}",
        again.token(),
        tokens[2]
    );
    again.release().await?;
    for p in permits {
        p.release().await?;
    }
    Ok(())
}

/// A permit on a fixed lease that is not renewed expires, and a waiter gets it
/// then, with a greater token.
pub(crate) async fn an_expired_permit_is_reacquirable(ctx: &Ctx) -> CaseResult {
    let (a, b) = (ctx.locker().await?, ctx.locker().await?);
    let key = ctx.key("expiring");
    let first = a
        .semaphore(key.as_str(), 1)
        .acquire()
        .lease(Duration::from_millis(300))
        .no_wait()
        .await?;
    let next = b
        .semaphore(key.as_str(), 1)
        .acquire()
        .lease(Duration::from_secs(10))
        .wait(LIMIT)
        .await?;
    ensure!(
        next.token() > first.token(),
        "the permit taken after an expiry has token {}, not above {}",
        next.token(),
        first.token()
    );
    ensure!(first.is_lost(), "the expired permit is not reported lost");
    next.release().await?;
    Ok(())
}

/// A request whose limit differs from the one the holders use is refused with a
/// `Config` error at once — waiting or not — and the holders are untouched.
pub(crate) async fn a_permit_limit_mismatch_is_a_config_error(ctx: &Ctx) -> CaseResult {
    let (a, b) = (ctx.locker().await?, ctx.locker().await?);
    let key = ctx.key("mismatch");
    let held = a.semaphore(key.as_str(), 2).try_acquire().await?;
    let started = Instant::now();
    for (what, r) in [
        (
            "try_acquire",
            b.semaphore(key.as_str(), 3).try_acquire().await,
        ),
        (
            "a waiting acquire",
            b.semaphore(key.as_str(), 3).acquire().wait(LIMIT).await,
        ),
    ] {
        match r {
            Err(LockError::Config(_)) => {}
            Err(e) => {
                fail!("{what} with limit 3 beside a holder of limit 2: expected Config, got {e}")
            }
            Ok(g) => fail!(
                "{what} with limit 3 was granted beside a holder of limit 2 (token {})",
                g.token()
            ),
        }
    }
    ensure!(
        started.elapsed() < LIMIT / 2,
        "the mismatched waiting acquire waited instead of failing"
    );
    ensure!(!held.is_lost(), "the holder's permit was disturbed");
    let second = b.semaphore(key.as_str(), 2).try_acquire().await?;
    second.release().await?;
    held.release().await?;
    Ok(())
}

/// Two permits of two are held and two waiters queue; one release lets exactly
/// one waiter in (the semaphore is full again), the second release the other.
pub(crate) async fn a_release_wakes_one_waiter(ctx: &Ctx) -> CaseResult {
    let mode = LockMode::Permit { limit: 2 };
    let (a, b, c) = (
        ctx.locker().await?,
        ctx.locker().await?,
        ctx.locker().await?,
    );
    let key = ctx.key("wake-one");
    let p1 = take(&a, &key, mode, None).await?;
    let p2 = take(&b, &key, mode, None).await?;
    let log = Log::default();
    let w1 = Waiter::start(ctx, &key, "w1", mode, &log).await?;
    ctx.until_queued(&key, 1, LIMIT).await?;
    let w2 = Waiter::start(ctx, &key, "w2", mode, &log).await?;
    ctx.until_queued(&key, 2, LIMIT).await?;
    p1.release().await?;
    let first = until_count(&log, 1, LIMIT, "one release").await?;
    ensure!(
        !super::serves_in_order(&ctx.capabilities()) || first == ["w1"],
        "one release let {first:?} in first; w1 queued first (fair)"
    );
    expect_contended(
        take(&c, &key, mode, None).await,
        "a third permit after one release",
    )?;
    ensure!(log.names() == first, "one release let {:?} in", log.names());
    p2.release().await?;
    until_granted(&log, &["w1", "w2"], LIMIT, "the second release").await?;
    w1.release().await?;
    w2.release().await
}

/// A waiter for a full semaphore goes away mid-wait; when the holder releases,
/// the permit is free at once for someone else: nothing of the waiter is left.
pub(crate) async fn a_cancelled_permit_acquire_leaves_nothing(ctx: &Ctx) -> CaseResult {
    let mode = LockMode::Permit { limit: 1 };
    let (a, c) = (ctx.locker().await?, ctx.locker().await?);
    let key = ctx.key("cancelled");
    let held = take(&a, &key, mode, None).await?;
    let waiter = Waiter::start(ctx, &key, "waiter", mode, &Log::default()).await?;
    ctx.until_queued(&key, 1, LIMIT).await?;
    waiter.cancel().await;
    ctx.until_queued(&key, 0, LIMIT).await?;
    held.release().await?;
    let next = match take(&c, &key, mode, Some(Duration::from_secs(3))).await {
        Ok(g) => g,
        Err(e) => {
            fail!("after the waiter went away and the holder released, no permit was free: {e}")
        }
    };
    next.release().await?;
    Ok(())
}

/// A child process takes a permit (with the watchdog) and is killed with SIGKILL;
/// its permit is free within one TTL of the kill, with a greater token.
pub(crate) async fn a_killed_holders_permit_is_freed(ctx: &Ctx) -> CaseResult {
    let (Some(url), Some(command)) = (ctx.harness.holder_url(), ctx.holder.as_ref()) else {
        return Err(CaseError::Skipped(
            "the harness cannot start a holder process".into(),
        ));
    };
    let b = ctx.locker().await?;
    let reference = reference_op(ctx, &b).await?;
    let key = ctx.key("abandoned-permit");
    let ttl = Duration::from_millis(1000);
    let (child, child_token) =
        match HolderProcess::start_permit(command(), &url, &key, ttl, 2).await {
            Ok(started) => started,
            Err(e) => fail!("{e}"),
        };
    let child_ttl = child.effective_ttl();
    let mode = LockMode::Permit { limit: 2 };
    let mine = take(&b, &key, mode, None).await?;
    let other = ctx.locker().await?;
    expect_contended(
        take(&other, &key, mode, None).await,
        "a third permit while the child holds one",
    )?;
    let limit = child_ttl.max(ttl) + tolerance(Duration::from_millis(700), reference);
    let killed = Instant::now();
    child.kill().await;
    let g = take(&other, &key, mode, Some(limit + Duration::from_secs(5))).await?;
    let after = killed.elapsed();
    ensure!(
        after <= limit,
        "the killed holder's permit was freed {} after the kill; limit {}",
        lockkit_core::human_duration(after),
        lockkit_core::human_duration(limit)
    );
    ensure!(
        g.token().get() > child_token,
        "token {} after the kill is not greater than the dead holder's {child_token}",
        g.token()
    );
    g.release().await?;
    mine.release().await?;
    Ok(())
}
