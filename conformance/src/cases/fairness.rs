//! Fairness: waiters served in the order they queued.

use std::time::Duration;

use lockkit_core::LockMode;

use super::waiters::{Log, Waiter, until_granted};
use crate::check::{CaseResult, ensure};
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
