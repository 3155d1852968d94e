//! Read-write locks: readers share, a writer excludes everyone, and where the
//! backend orders its waiters a reader never overtakes a writer queued before it.
//! For drivers with shared holds ([`lockkit_core::Capabilities::shared`]).

use std::time::Duration;

use lockkit_core::{LockError, LockMode, Locker};
use tokio::time::Instant;

use super::expect_contended;
use super::waiters::{Log, Waiter, until_granted};
use crate::check::{CaseResult, ensure, fail};
use crate::harness::Ctx;

/// How long a waiter may take to be queued or served.
const LIMIT: Duration = Duration::from_secs(10);

/// Two readers on different drivers hold the same key at once (a third joins by
/// waiting), while a writer is refused until every reader has released.
pub(crate) async fn readers_share(ctx: &Ctx) -> CaseResult {
    let (a, b, w) = (
        ctx.locker().await?,
        ctx.locker().await?,
        ctx.locker().await?,
    );
    let key = ctx.key("shared");
    let ra = a.read_lock(key.as_str()).no_wait().await?;
    let rb = match b.read_lock(key.as_str()).no_wait().await {
        Ok(g) => g,
        Err(e) => fail!("a second reader was refused while only a reader held: {e}"),
    };
    let rc = b.read_lock(key.as_str()).wait(LIMIT).await?;
    expect_contended(
        w.write_lock(key.as_str()).no_wait().await,
        "a writer while three readers hold",
    )?;
    ra.release().await?;
    rb.release().await?;
    expect_contended(
        w.write_lock(key.as_str()).no_wait().await,
        "a writer while one reader still holds",
    )?;
    let token = rc.token().get();
    rc.release().await?;
    let g = w.write_lock(key.as_str()).no_wait().await?;
    ensure!(
        g.token().get() > token,
        "the writer's token {} is not greater than the last reader's {token}",
        g.token()
    );
    g.release().await?;
    Ok(())
}

/// While a writer holds, readers and writers on other drivers are refused, and a
/// waiting reader is granted only after the writer releases, with a greater token.
/// The write lock is the driver's exclusive lock: `lock` is refused too.
pub(crate) async fn writer_excludes_readers_and_writers(ctx: &Ctx) -> CaseResult {
    let (w, other) = (ctx.locker().await?, ctx.locker().await?);
    let key = ctx.key("exclusive");
    let held = w.write_lock(key.as_str()).no_wait().await?;
    expect_contended(
        other.read_lock(key.as_str()).no_wait().await,
        "a reader while a writer holds",
    )?;
    expect_contended(
        other.write_lock(key.as_str()).no_wait().await,
        "a second writer while a writer holds",
    )?;
    expect_contended(
        other.try_lock(key.as_str()).await,
        "the exclusive lock while a writer holds",
    )?;
    let log = Log::default();
    let reader = Waiter::start(ctx, &key, "reader", LockMode::Shared, &log).await?;
    ctx.until_queued(&key, 1, LIMIT).await?;
    ensure!(
        log.names().is_empty(),
        "a waiting reader was granted while the writer held"
    );
    let writer_token = held.token().get();
    let released_at = Instant::now();
    held.release().await?;
    until_granted(&log, &["reader"], LIMIT, "after the writer released").await?;
    let grant = log.get("reader")?;
    ensure!(
        grant.at >= released_at,
        "the waiting reader was granted before the writer released"
    );
    ensure!(
        grant.token > writer_token,
        "the reader's token {} is not greater than the writer's {writer_token}",
        grant.token
    );
    reader.release().await
}

/// Checks the backend's view of `key`: the modes of its holders, and (where
/// counted) how many wait.
async fn expect_state(
    ctx: &Ctx,
    key: &str,
    holders: &[LockMode],
    waiters: usize,
    what: &str,
) -> CaseResult {
    let seen = ctx.inspect(key).await?;
    let modes: Vec<LockMode> = seen.holders.iter().map(|h| h.mode).collect();
    ensure!(
        modes == holders && seen.waiters.is_none_or(|n| n == waiters),
        "{what}: the backend shows holders {modes:?} and {:?} waiter(s), expected {holders:?} and {waiters}",
        seen.waiters
    );
    Ok(())
}

/// A writer holds; then reader 1, reader 2, writer 3 and reader 4 queue in that
/// order (each queued, as the backend shows, before the next asks). The release
/// lets readers 1 and 2 in together; reader 4 stays queued behind writer 3 even
/// though only readers hold (no writer starvation); writer 3 gets it when both
/// readers leave, and reader 4 after writer 3. For drivers whose waiters are
/// served in order and counted.
pub(crate) async fn read_write_order_is_fifo(ctx: &Ctx) -> CaseResult {
    let holder = ctx.locker().await?;
    let key = ctx.key("queue");
    let held = holder.write_lock(key.as_str()).no_wait().await?;
    let log = Log::default();
    let mut queued = Vec::new();
    let order = [
        ("r1", LockMode::Shared),
        ("r2", LockMode::Shared),
        ("w3", LockMode::Exclusive),
        ("r4", LockMode::Shared),
    ];
    for (n, (name, mode)) in order.into_iter().enumerate() {
        queued.push(Waiter::start(ctx, &key, name, mode, &log).await?);
        ctx.until_queued(&key, n + 1, LIMIT).await?;
        let early = log.names();
        ensure!(
            early.is_empty(),
            "{early:?} granted while the first writer held"
        );
    }
    let mut queued = queued.into_iter();
    let (Some(r1), Some(r2), Some(w3), Some(r4)) =
        (queued.next(), queued.next(), queued.next(), queued.next())
    else {
        fail!("BUG: four waiters were started");
    };
    let (shared, exclusive) = (LockMode::Shared, LockMode::Exclusive);

    held.release().await?;
    until_granted(
        &log,
        &["r1", "r2"],
        LIMIT,
        "after the first writer released",
    )
    .await?;
    expect_state(
        ctx,
        &key,
        &[shared, shared],
        2,
        "while readers 1 and 2 hold",
    )
    .await?;
    r1.release().await?;
    expect_state(ctx, &key, &[shared], 2, "while reader 2 still holds").await?;
    until_granted(&log, &["r1", "r2"], LIMIT, "while reader 2 still holds").await?;
    r2.release().await?;
    until_granted(
        &log,
        &["r1", "r2", "w3"],
        LIMIT,
        "after both readers released",
    )
    .await?;
    expect_state(ctx, &key, &[exclusive], 1, "while writer 3 holds").await?;
    w3.release().await?;
    until_granted(
        &log,
        &["r1", "r2", "w3", "r4"],
        LIMIT,
        "after writer 3 released",
    )
    .await?;
    r4.release().await?;

    let token = |n: &str| log.get(n).map(|g| g.token);
    let (r1, r2, w3, r4) = (token("r1")?, token("r2")?, token("w3")?, token("r4")?);
    ensure!(
        w3 > r1.max(r2) && r4 > w3,
        "tokens do not follow the queue: {:?}",
        log.all()
    );
    Ok(())
}

/// A client that holds a key for reading cannot upgrade to writing under the same
/// owner: the request is refused at once with `Unsupported`, and the read hold is
/// untouched.
pub(crate) async fn read_hold_is_not_upgraded(ctx: &Ctx) -> CaseResult {
    let locker: Locker = ctx.locker().await?;
    let key = ctx.key("upgrade");
    let read = locker.read_lock(key.as_str()).no_wait().await?;
    let again = locker
        .write_lock(key.as_str())
        .owner(read.owner().clone())
        .no_wait()
        .await;
    match again {
        Err(LockError::Unsupported { .. }) => {}
        Err(e) => fail!("upgrading a read hold: expected Unsupported, got {e}"),
        Ok(g) => fail!(
            "a read hold was upgraded to a write hold (token {})",
            g.token()
        ),
    }
    ensure!(
        read.hold_count() == 1 && !read.is_lost(),
        "the refused upgrade changed the read hold (count {}, lost {})",
        read.hold_count(),
        read.is_lost()
    );
    read.release().await?;
    Ok(())
}
