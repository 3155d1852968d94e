//! `lockkit demo`: the inventory scenario of the source articles.
//!
//! W workers sell a stock of S items kept in SQLite (`inventory(sku, stock, fence)`).
//! Each order reads the stock, "processes" for a moment, and writes stock − 1.
//!
//! 1. Without a lock, concurrent read-modify-writes lose updates: more than S items
//!    are sold.
//! 2. Through lockkit, each order holds `inventory:sku-42` and writes with its
//!    fencing token (`… WHERE fence <= token`). One worker stalls past its lease;
//!    others take over, and its late write carries a stale token and is rejected.
//!    Exactly S items are sold.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use lockkit::fence::{FencedUpdate, Placeholders};
use lockkit::{LockError, Locker};
use serde::Serialize;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

const SKU: &str = "sku-42";
const LOCK: &str = "inventory:sku-42";

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Concurrent workers (service instances).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(2..=256))]
    workers: u32,
    /// Items in stock.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    stock: u64,
    /// Lock backend (default: a SQLite lock file beside the inventory; no server).
    #[arg(long, env = "LOCKKIT_URL", hide_env_values = true)]
    url: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Default, Serialize)]
struct Phase {
    sold: u64,
    oversold: u64,
    final_stock: i64,
    stale_writes_rejected: u64,
    seconds: f64,
    orders_per_second: f64,
}

#[derive(Debug, Serialize)]
struct DemoReport {
    workers: u32,
    stock: u64,
    lock_backend: String,
    without_lock: Phase,
    with_lockkit: Phase,
}

fn db_err(e: sqlx::Error) -> LockError {
    LockError::backend("demo-inventory", e)
}

async fn inventory(
    path: &std::path::Path,
    workers: u32,
    stock: u64,
) -> Result<SqlitePool, LockError> {
    let opts = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .busy_timeout(Duration::from_secs(10));
    let pool = SqlitePoolOptions::new()
        .max_connections(workers)
        .connect_with(opts)
        .await
        .map_err(db_err)?;
    sqlx::query("CREATE TABLE IF NOT EXISTS inventory (sku TEXT PRIMARY KEY, stock INTEGER NOT NULL, fence INTEGER NOT NULL DEFAULT 0)")
        .execute(&pool)
        .await
        .map_err(db_err)?;
    sqlx::query("INSERT INTO inventory (sku, stock, fence) VALUES (?1, ?2, 0) ON CONFLICT(sku) DO UPDATE SET stock = ?2, fence = 0")
        .bind(SKU)
        .bind(stock as i64)
        .execute(&pool)
        .await
        .map_err(db_err)?;
    Ok(pool)
}

async fn read_stock(pool: &SqlitePool) -> Result<i64, LockError> {
    sqlx::query_scalar("SELECT stock FROM inventory WHERE sku = ?1")
        .bind(SKU)
        .fetch_one(pool)
        .await
        .map_err(db_err)
}

fn bar(label: &'static str, len: u64, hidden: bool) -> ProgressBar {
    let bar = if hidden {
        ProgressBar::hidden()
    } else {
        crate::progress::add(ProgressBar::new(len))
    };
    bar.set_style(
        ProgressStyle::with_template("{prefix:>14} {bar:30} {pos}/{len} sold {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_prefix(label);
    bar
}

/// Orders without a lock: read, pause, write read−1.
async fn without_lock(pool: &SqlitePool, a: &Args) -> Result<Phase, LockError> {
    let sold = Arc::new(AtomicU64::new(0));
    let progress = bar("without lock", a.stock, a.json);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..a.workers {
        let (pool, sold, progress) = (pool.clone(), sold.clone(), progress.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let stock = read_stock(&pool).await?;
                if stock <= 0 {
                    return Ok::<_, LockError>(());
                }
                tokio::time::sleep(Duration::from_millis(2)).await; // processing the order
                sqlx::query("UPDATE inventory SET stock = ?1 WHERE sku = ?2")
                    .bind(stock - 1)
                    .bind(SKU)
                    .execute(&pool)
                    .await
                    .map_err(db_err)?;
                sold.fetch_add(1, Ordering::SeqCst);
                progress.inc(1);
            }
        }));
    }
    join(tasks).await?;
    progress.finish_and_clear();
    finish(pool, a, sold.load(Ordering::SeqCst), 0, started).await
}

/// Orders through lockkit with fenced writes; the first worker to get the lock
/// stalls past its lease once, while the whole stock is still there.
async fn with_lockkit(pool: &SqlitePool, url: &str, a: &Args) -> Result<Phase, LockError> {
    let sold = Arc::new(AtomicU64::new(0));
    let stall_pending = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let rejected = Arc::new(AtomicU64::new(0));
    let progress = bar("with lockkit", a.stock, a.json);
    let started = Instant::now();
    let fenced: Arc<str> = FencedUpdate::new("inventory", "sku")
        .set("stock")
        .sql(Placeholders::QuestionNumbered)?
        .into();
    let mut tasks = Vec::new();
    for worker in 0..a.workers {
        // Each worker is its own "service instance" with its own connection.
        let locker: Locker = lockkit::connect(url).await?;
        let (pool, sold, rejected, progress, stall_pending, fenced) = (
            pool.clone(),
            sold.clone(),
            rejected.clone(),
            progress.clone(),
            stall_pending.clone(),
            fenced.clone(),
        );
        tasks.push(tokio::spawn(async move {
            loop {
                // The first grant of the run stalls (decided after the grant, so it
                // happens exactly once, before anything is sold); a worker that asked
                // for the short lease but was not first just works within it.
                let wants_stall = stall_pending.load(Ordering::SeqCst);
                let request = locker.lock(LOCK).wait(Duration::from_secs(60));
                let guard = if wants_stall {
                    request.lease(Duration::from_millis(150)).await?
                } else {
                    request.ttl(Duration::from_secs(5)).await?
                };
                let stall = wants_stall && stall_pending.swap(false, Ordering::SeqCst);
                let stock = read_stock(&pool).await?;
                if stock <= 0 {
                    guard.release().await?;
                    return Ok::<_, LockError>(());
                }
                if stall {
                    // A GC pause / SIGSTOP: the lease runs out, someone else sells.
                    progress.set_message(format!("(worker {worker} stalled past its lease)"));
                    tokio::time::sleep(Duration::from_millis(600)).await;
                } else {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                let token = i64::try_from(guard.token()).map_err(|e| {
                    LockError::Config(format!("a token does not fit a BIGINT: {e}"))
                })?;
                let written = sqlx::query(sqlx::AssertSqlSafe(fenced.to_string()))
                    .bind(stock - 1)
                    .bind(token)
                    .bind(SKU)
                    .execute(&pool)
                    .await
                    .map_err(db_err)?;
                if written.rows_affected() == 1 {
                    sold.fetch_add(1, Ordering::SeqCst);
                    progress.inc(1);
                } else {
                    rejected.fetch_add(1, Ordering::SeqCst);
                    progress.set_message("(a stale-token write was rejected)");
                }
                // After a stall the release reports Lost: expected, the write was fenced.
                match guard.release().await {
                    Ok(()) | Err(LockError::Lost { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
        }));
    }
    join(tasks).await?;
    progress.finish_and_clear();
    finish(
        pool,
        a,
        sold.load(Ordering::SeqCst),
        rejected.load(Ordering::SeqCst),
        started,
    )
    .await
}

async fn join(tasks: Vec<tokio::task::JoinHandle<Result<(), LockError>>>) -> Result<(), LockError> {
    for t in tasks {
        t.await
            .map_err(|e| LockError::Config(format!("a demo worker crashed: {e}")))??;
    }
    Ok(())
}

async fn finish(
    pool: &SqlitePool,
    a: &Args,
    sold: u64,
    rejected: u64,
    started: Instant,
) -> Result<Phase, LockError> {
    let seconds = started.elapsed().as_secs_f64();
    Ok(Phase {
        sold,
        oversold: sold.saturating_sub(a.stock),
        final_stock: read_stock(pool).await?,
        stale_writes_rejected: rejected,
        seconds,
        orders_per_second: sold as f64 / seconds.max(1e-9),
    })
}

pub(crate) async fn run(a: Args) -> Result<ExitCode, LockError> {
    let dir = tempfile::tempdir()
        .map_err(|e| LockError::Config(format!("cannot create a temp dir: {e}")))?;
    let url = a
        .url
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", dir.path().join("locks.db").display()));
    let db = dir.path().join("inventory.db");
    if !a.json {
        println!(
            "{} workers selling {} items of {SKU} (inventory in SQLite)",
            a.workers, a.stock
        );
    }
    let pool = inventory(&db, a.workers, a.stock).await?;
    let without = without_lock(&pool, &a).await?;
    if !a.json {
        println!(
            "without a lock : sold {:>5}, oversold {:>5}   ({:.0} orders/s)",
            without.sold, without.oversold, without.orders_per_second
        );
    }
    drop(pool);
    let pool = inventory(&db, a.workers, a.stock).await?;
    let with = with_lockkit(&pool, &url, &a).await?;
    let report = DemoReport {
        workers: a.workers,
        stock: a.stock,
        lock_backend: lockkit::redact_url(&url),
        without_lock: without,
        with_lockkit: with,
    };
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        let w = &report.with_lockkit;
        println!(
            "with lockkit   : sold {:>5}, oversold {:>5}   ({:.0} orders/s, lock backend {})",
            w.sold, w.oversold, w.orders_per_second, report.lock_backend
        );
        println!(
            "                 stale-token writes rejected: {} (a worker stalled past its lease; fencing refused its late write)",
            w.stale_writes_rejected
        );
    }
    let ok = report.with_lockkit.oversold == 0 && report.with_lockkit.final_stock == 0;
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
