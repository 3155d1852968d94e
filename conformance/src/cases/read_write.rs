//! Read-write locks: readers share, a writer excludes everyone, and the queue is
//! first-come first-served across both modes. Only for drivers that claim
//! `read_write`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use lockkit_core::{LockError, Locker};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::{sleep, timeout};

use super::{expect_contended, reference_op, tolerance};
use crate::check::{CaseError, CaseResult, ensure, fail};
use crate::harness::Ctx;

fn require_read_write(ctx: &Ctx) -> CaseResult {
    if ctx.capabilities().read_write {
        Ok(())
    } else {
        Err(CaseError::Skipped(
            "the driver has no read-write lock".into(),
        ))
    }
}

/// The grants seen so far, as `(name, token)` in the order they happened.
type Log = Arc<Mutex<Vec<(&'static str, u64)>>>;

fn seen(log: &Log) -> Vec<&'static str> {
    log.lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|(n, _)| *n)
        .collect()
}

/// A waiter on its own driver: logs its grant, then holds until told to release.
struct Waiter {
    release: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), LockError>>,
}

impl Waiter {
    async fn start(
        ctx: &Ctx,
        key: &str,
        name: &'static str,
        read: bool,
        log: &Log,
    ) -> Result<Self, CaseError> {
        let locker = ctx.locker().await?;
        let (release, released) = oneshot::channel();
        let (key, log) = (key.to_owned(), log.clone());
        let task = tokio::spawn(async move {
            let request = if read {
                locker.read_lock(key.as_str())
            } else {
                locker.write_lock(key.as_str())
            };
            let g = request
                .ttl(Duration::from_secs(10))
                .wait(Duration::from_secs(60))
                .await?;
            log.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((name, g.token().get()));
            let _ = released.await;
            g.release().await
        });
        Ok(Self {
            release: Some(release),
            task,
        })
    }

    async fn release(mut self) -> CaseResult {
        if let Some(tx) = self.release.take() {
            let _ = tx.send(());
        }
        match timeout(Duration::from_secs(60), self.task).await {
            Ok(Ok(r)) => Ok(r?),
            Ok(Err(e)) => fail!("a waiter task panicked: {e}"),
            Err(_) => fail!("a waiter was not served and released within 60 s"),
        }
    }
}

/// Waits (bounded by `limit`) until the log holds exactly `want`, in any order.
async fn until_granted(log: &Log, want: &[&str], limit: Duration, what: &str) -> CaseResult {
    let mut want: Vec<&str> = want.to_vec();
    want.sort_unstable();
    let poll = async {
        loop {
            let mut now = seen(log);
            now.sort_unstable();
            if now == want || now.len() > want.len() {
                return now;
            }
            sleep(Duration::from_millis(2)).await;
        }
    };
    match timeout(limit, poll).await {
        Ok(now) if now == want => Ok(()),
        Ok(now) => fail!("{what}: granted {now:?}, expected exactly {want:?}"),
        Err(_) => fail!(
            "{what}: expected {want:?} to be granted within {limit:?}, got {:?}",
            seen(log)
        ),
    }
}

/// Two readers on different drivers hold the same key at once (a third joins by
/// waiting), while a writer is refused until every reader has released.
pub(crate) async fn readers_share(ctx: &Ctx) -> CaseResult {
    require_read_write(ctx)?;
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
    let rc = b
        .read_lock(key.as_str())
        .wait(Duration::from_secs(10))
        .await?;
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
    require_read_write(ctx)?;
    let (w, other) = (ctx.locker().await?, ctx.locker().await?);
    let reference = reference_op(ctx, &w).await?;
    let gap = tolerance(Duration::from_millis(50), reference);
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
    let reader = Waiter::start(ctx, &key, "reader", true, &log).await?;
    sleep(gap).await;
    ensure!(
        seen(&log).is_empty(),
        "a waiting reader was granted while the writer held"
    );
    let writer_token = held.token().get();
    held.release().await?;
    until_granted(
        &log,
        &["reader"],
        gap + Duration::from_secs(10),
        "after the writer released",
    )
    .await?;
    let reader_token = log.lock().unwrap_or_else(|e| e.into_inner())[0].1;
    ensure!(
        reader_token > writer_token,
        "the reader's token {reader_token} is not greater than the writer's {writer_token}"
    );
    reader.release().await
}

/// A writer holds; then reader 1, reader 2, writer 3 and reader 4 queue in that
/// order (each a measured gap after the previous). The release lets readers 1 and
/// 2 in together; reader 4 stays queued behind writer 3 even though only readers
/// hold (no writer starvation); writer 3 gets it when both readers leave, and
/// reader 4 after writer 3.
pub(crate) async fn read_write_order_is_fifo(ctx: &Ctx) -> CaseResult {
    require_read_write(ctx)?;
    let holder = ctx.locker().await?;
    let reference = reference_op(ctx, &holder).await?;
    let gap = tolerance(Duration::from_millis(50), reference);
    let grant_limit = gap + Duration::from_secs(10);
    let key = ctx.key("queue");
    let held = holder.write_lock(key.as_str()).no_wait().await?;
    let log = Log::default();
    let mut queued = Vec::new();
    for (name, read) in [("r1", true), ("r2", true), ("w3", false), ("r4", true)] {
        queued.push(Waiter::start(ctx, &key, name, read, &log).await?);
        sleep(gap).await;
        let early = seen(&log);
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

    held.release().await?;
    until_granted(
        &log,
        &["r1", "r2"],
        grant_limit,
        "after the first writer released",
    )
    .await?;
    sleep(gap).await;
    until_granted(
        &log,
        &["r1", "r2"],
        grant_limit,
        "while readers 1 and 2 hold (writer 3 and reader 4 must wait)",
    )
    .await?;

    r1.release().await?;
    sleep(gap).await;
    until_granted(
        &log,
        &["r1", "r2"],
        grant_limit,
        "while reader 2 still holds",
    )
    .await?;
    r2.release().await?;
    until_granted(
        &log,
        &["r1", "r2", "w3"],
        grant_limit,
        "after both readers released",
    )
    .await?;
    sleep(gap).await;
    until_granted(
        &log,
        &["r1", "r2", "w3"],
        grant_limit,
        "while writer 3 holds (reader 4 must wait)",
    )
    .await?;
    w3.release().await?;
    until_granted(
        &log,
        &["r1", "r2", "w3", "r4"],
        grant_limit,
        "after writer 3 released",
    )
    .await?;
    r4.release().await?;

    let log = log.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let token = |n: &str| log.iter().find(|(m, _)| *m == n).map_or(0, |(_, t)| *t);
    ensure!(
        token("w3") > token("r1").max(token("r2")) && token("r4") > token("w3"),
        "tokens do not follow the queue: {log:?}"
    );
    Ok(())
}

/// A client that holds a key for reading cannot upgrade to writing under the same
/// owner: the request is refused at once with `Unsupported`, and the read hold is
/// untouched.
pub(crate) async fn read_hold_is_not_upgraded(ctx: &Ctx) -> CaseResult {
    require_read_write(ctx)?;
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
