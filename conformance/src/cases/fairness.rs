//! Fairness: waiters served in the order they queued.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockkit_core::LockError;
use tokio::time::{sleep, timeout};

use super::{reference_op, tolerance};
use crate::check::{CaseError, CaseResult, ensure, fail};
use crate::harness::Ctx;

/// A holder holds; N waiters, each with its own driver, queue one after another
/// (each started a measured gap — 50 ms plus ten reference round trips — after
/// the previous, so it has queued before the next asks); then every release hands
/// the lock to the next waiter in exactly the order they queued, with increasing
/// tokens. Only for drivers that claim `fair`.
pub(crate) async fn fifo_order(ctx: &Ctx) -> CaseResult {
    const WAITERS: usize = 4;
    if !ctx.capabilities().fair {
        return Err(CaseError::Skipped(
            "the driver does not claim `fair` (first-come first-served waiters)".into(),
        ));
    }
    let holder = ctx.locker().await?;
    let reference = reference_op(ctx, &holder).await?;
    let gap = tolerance(Duration::from_millis(50), reference);
    let key = ctx.key("queue");
    let held = holder.try_lock(key.as_str()).await?;
    let served: Arc<Mutex<Vec<(usize, u64)>>> = Arc::default();
    let mut tasks = Vec::new();
    for i in 0..WAITERS {
        // Connect before the gap starts, so the gap covers only the enqueue.
        let locker = ctx.locker().await?;
        let (key, record) = (key.clone(), served.clone());
        tasks.push(tokio::spawn(async move {
            let g = locker
                .lock(key.as_str())
                .ttl(Duration::from_secs(10))
                .wait(Duration::from_secs(60))
                .await?;
            record
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((i, g.token().get()));
            g.release().await?;
            Ok::<_, LockError>(())
        }));
        sleep(gap).await;
        let early = served.lock().unwrap_or_else(|e| e.into_inner()).clone();
        ensure!(
            early.is_empty(),
            "waiter(s) {early:?} were granted while the lock was held"
        );
    }
    held.release().await?;
    for task in tasks {
        match timeout(Duration::from_secs(60), task).await {
            Ok(Ok(r)) => r?,
            Ok(Err(e)) => fail!("a waiter task panicked: {e}"),
            Err(_) => fail!("a waiter was not served within 60 s of the release"),
        }
    }
    let served = served.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let order: Vec<usize> = served.iter().map(|(i, _)| *i).collect();
    ensure!(
        order == (0..WAITERS).collect::<Vec<_>>(),
        "waiters were served in the order {order:?}, not in the order they queued (gap {})",
        lockkit_core::human_duration(gap)
    );
    ensure!(
        served.windows(2).all(|w| w[0].1 < w[1].1),
        "tokens did not increase along the queue: {served:?}"
    );
    Ok(())
}
