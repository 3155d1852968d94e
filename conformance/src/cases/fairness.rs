//! Fairness: waiters served in the order they queued.

use std::time::Duration;

use lockkit_core::{LockError, LockMode};

use super::waiters::{Log, Waiter, until_granted};
use crate::check::{CaseResult, ensure, fail};
use crate::harness::Ctx;

/// A holder holds; N waiters, each with its own driver, queue one after another
/// (each queued, as the backend shows, before the next asks); then every release
/// hands the lock to the next waiter in exactly the order they queued, with
/// increasing tokens. For drivers that claim `fair` and count their waiters.
pub(crate) async fn fifo_order(ctx: &Ctx) -> CaseResult {
    const NAMES: [&str; 4] = ["w0", "w1", "w2", "w3"];
    const LIMIT: Duration = Duration::from_secs(10);
    let holder = ctx.locker().await?;
    let key = ctx.key("queue");
    let held = holder.try_lock(key.as_str()).await?;
    let log = Log::default();
    let mut waiters = Vec::new();
    for (n, name) in NAMES.into_iter().enumerate() {
        waiters.push(Waiter::start(ctx, &key, name, LockMode::Exclusive, &log).await?);
        ctx.until_queued(&key, n + 1, LIMIT).await?;
        let early = log.names();
        ensure!(
            early.is_empty(),
            "{early:?} were granted while the lock was held"
        );
    }
    held.release().await?;
    for (n, waiter) in waiters.into_iter().enumerate() {
        until_granted(
            &log,
            &NAMES[..=n],
            LIMIT,
            "after the previous holder released",
        )
        .await?;
        waiter.release().await?;
    }
    let served = log.all();
    let order: Vec<&str> = served.iter().map(|g| g.name).collect();
    ensure!(
        order == NAMES,
        "waiters were served in the order {order:?}, not in the order they queued"
    );
    ensure!(
        served.windows(2).all(|w| w[0].token < w[1].token),
        "tokens did not increase along the queue: {served:?}"
    );
    Ok(())
}

/// Where fairness is asked for: a holder holds and a fair waiter queues; the
/// holder releases, and fair `try_lock`s sent from then on are refused until the
/// waiter has the key, never granted past it. (Where waiters poll, the key sits
/// free until the waiter's next poll: a `try_lock` that barged would win.)
pub(crate) async fn a_fair_try_lock_takes_no_key_past_a_live_waiter(ctx: &Ctx) -> CaseResult {
    const LIMIT: Duration = Duration::from_secs(10);
    let (holder, other) = (ctx.locker().await?, ctx.locker().await?);
    let key = ctx.key("no-barging");
    let held = holder.try_lock(key.as_str()).await?;
    let log = Log::default();
    let waiter = Waiter::start(ctx, &key, "w", LockMode::Exclusive, &log).await?;
    ctx.until_queued(&key, 1, LIMIT).await?;
    held.release().await?;
    let started = tokio::time::Instant::now();
    while log.names().is_empty() {
        match other.lock(key.as_str()).fair().no_wait().await {
            Err(LockError::Contended { .. }) => {}
            Ok(g) => fail!(
                "a fair try_lock took the free key (token {}) past the live waiter queued for it",
                g.token()
            ),
            Err(e) => fail!("a fair try_lock: expected Contended, got {e}"),
        }
        ensure!(
            started.elapsed() < LIMIT,
            "the waiter was never granted the free key"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    waiter.release().await?;
    Ok(())
}

/// Where the driver cannot serve waiters in order, a fair request is refused
/// with `Unsupported`, before anything is taken: never silently unfair.
pub(crate) async fn a_fair_request_is_refused_where_waiting_is_unfair(ctx: &Ctx) -> CaseResult {
    let (a, b) = (ctx.locker().await?, ctx.locker().await?);
    let key = ctx.key("unfair");
    match a.lock(key.as_str()).fair().no_wait().await {
        Err(LockError::Unsupported { .. }) => {}
        Ok(g) => fail!(
            "a fair request was granted (token {}) by an unfair driver",
            g.token()
        ),
        Err(e) => fail!("a fair request: expected Unsupported, got {e}"),
    }
    let free = b.try_lock(key.as_str()).await?;
    free.release().await?;
    Ok(())
}
