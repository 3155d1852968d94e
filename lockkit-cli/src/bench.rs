//! `lockkit bench URL`: uncontended lock+release latency, against the backend's raw
//! floor measured in the same run on the same backend.
//!
//! The floor is the least work a hand-rolled lock on that backend does per
//! lock+release, sent without lockkit on the same server: for SQL an acquiring
//! statement that returns the fencing counter plus a releasing `UPDATE` (SQLite and
//! PostgreSQL an upsert with `RETURNING`, MySQL an `UPDATE` with `LAST_INSERT_ID`);
//! for Redis `SET NX PX` then an EVALSHA compare-and-delete; for etcd one txn (put if
//! the key's create_revision is 0) then a delete; for ZooKeeper an EPHEMERAL_SEQUENTIAL
//! create under a fixed parent, a getChildren of the parent and a delete (three round
//! trips, on a session of its own);
//! for `mem://` an insert and a remove in a mutex-guarded map. Rounds of lockkit and floor alternate, so drift in
//! machine load hits both alike.

use std::collections::HashMap;
use std::future::Future;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use indicatif::ProgressBar;
use lockkit::{LockError, redact_url};
use serde::Serialize;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The backend, e.g. sqlite:///tmp/locks.db or mem:// (also read from LOCKKIT_URL).
    #[arg(env = "LOCKKIT_URL")]
    url: String,
    /// Measured lock+release pairs for each of lockkit and the floor.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(10..=10_000_000))]
    iterations: u64,
    /// Contended hand-offs to measure (release by one client → grant to a waiting
    /// one on another connection).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(0..=100_000))]
    handoffs: u64,
    /// Also measure a queue of this many waiters (each on its own connection, each
    /// taking the lock once): hand-off latency, and server commands per hand-off
    /// (Redis, from INFO commandstats).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=1000))]
    waiters: u64,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct Latency {
    p50_us: u64,
    p90_us: u64,
    p99_us: u64,
    max_us: u64,
    ops_per_second: f64,
}

#[derive(Debug, Serialize)]
struct BenchReport {
    backend: String,
    iterations: u64,
    lockkit: Latency,
    floor: Option<Latency>,
    floor_description: &'static str,
    p50_ratio_lockkit_over_floor: Option<f64>,
    handoff: Option<Latency>,
    queue: Option<Queue>,
}

#[derive(Debug, Serialize)]
struct Queue {
    waiters: u64,
    handoff: Latency,
    /// Requests clients sent per hand-off (Redis only, from INFO commandstats):
    /// EVALSHA, SUBSCRIBE and the like, each one round trip, divided by the number
    /// of hand-offs.
    commands_per_handoff: Option<f64>,
    /// Every command the server ran per hand-off, counting those run inside the Lua
    /// scripts (which Redis counts in INFO commandstats too).
    all_commands_per_handoff: Option<f64>,
}

/// Commands a Redis client sends itself; every other command in INFO commandstats
/// ran inside a Lua script (Redis counts those too).
const REDIS_REQUESTS: &[&str] = &[
    "evalsha",
    "eval",
    "script",
    "subscribe",
    "unsubscribe",
    "psubscribe",
    "info",
    "ping",
    "client",
    "hello",
    "select",
    "cluster",
    "readonly",
];

/// Command calls the Redis server has run (INFO commandstats): `(requests sent by
/// clients, all commands including those run inside scripts)`.
async fn redis_calls(url: &str) -> Option<(u64, u64)> {
    let (url, _) = url.split_once('?').unwrap_or((url, ""));
    let mut conn = redis::Client::open(url)
        .ok()?
        .get_multiplexed_async_connection()
        .await
        .ok()?;
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut conn)
        .await
        .ok()?;
    let (mut requests, mut all) = (0, 0);
    for line in info.lines() {
        let Some((name, stats)) = line
            .strip_prefix("cmdstat_")
            .and_then(|l| l.split_once(':'))
        else {
            continue;
        };
        let Some(calls) = stats
            .split(',')
            .find_map(|kv| kv.strip_prefix("calls="))
            .and_then(|v| v.parse::<u64>().ok())
        else {
            continue;
        };
        all += calls;
        if REDIS_REQUESTS.contains(&name.split('|').next().unwrap_or(name)) {
            requests += calls;
        }
    }
    Some((requests, all))
}

/// `waiters` clients queue behind one holder; each takes the lock once. Hand-off
/// = release by one → grant to the next.
async fn queue(url: &str, waiters: u64) -> Result<Option<Queue>, LockError> {
    if waiters == 0 {
        return Ok(None);
    }
    let key = "bench/queue";
    let holder = lockkit::connect(url).await?;
    let mut lockers = Vec::new();
    for _ in 0..waiters {
        lockers.push(lockkit::connect(url).await?);
    }
    let held = holder.lock(key).wait(Duration::from_secs(10)).await?;
    // From here on, every request counts: each waiter's first (queuing) attempt, the
    // wake-ups, the grants and the releases.
    let before = redis_calls(url).await;
    let last_release = std::sync::Arc::new(tokio::sync::Mutex::new(Instant::now()));
    let mut tasks = Vec::new();
    for locker in lockers {
        let last_release = last_release.clone();
        tasks.push(tokio::spawn(async move {
            let g = locker.lock(key).wait(Duration::from_secs(120)).await?;
            let mut last = last_release.lock().await;
            let handoff = last.elapsed();
            *last = Instant::now();
            drop(last);
            g.release().await?;
            Ok::<_, LockError>(handoff)
        }));
    }
    // Let every waiter reach its wait (a benchmark settle, not a correctness bet).
    tokio::time::sleep(Duration::from_millis(500)).await;
    *last_release.lock().await = Instant::now();
    held.release().await?;
    let mut h = histogram()?;
    let mut total = Duration::ZERO;
    for t in tasks {
        let d = t
            .await
            .map_err(|e| LockError::Config(format!("a queued waiter crashed: {e}")))??;
        total += d;
        let _ = h.record((d.as_micros() as u64).max(1));
    }
    let after = redis_calls(url).await;
    // Minus the INFO call itself.
    let per_handoff = |b: u64, a: u64| a.saturating_sub(b + 1) as f64 / waiters as f64;
    let (commands_per_handoff, all_commands_per_handoff) = match (before, after) {
        (Some(b), Some(a)) => (Some(per_handoff(b.0, a.0)), Some(per_handoff(b.1, a.1))),
        _ => (None, None),
    };
    Ok(Some(Queue {
        waiters,
        handoff: summary(&h, total),
        commands_per_handoff,
        all_commands_per_handoff,
    }))
}

enum Floor {
    Sqlite(SqlitePool),
    Postgres(sqlx::PgPool),
    MySql(sqlx::MySqlPool),
    Mem(Mutex<HashMap<String, u128>>),
    Redis(redis::aio::MultiplexedConnection, redis::Script),
    Etcd(Box<etcd_client::Client>),
    Zk(zookeeper_client::Client),
}

/// The persistent parent of the ZooKeeper floor's lock nodes (created once, left in place).
const ZK_FLOOR_PARENT: &str = "/lockkit-bench-floor";
/// Prefix of the floor's EPHEMERAL_SEQUENTIAL nodes; the server appends the sequence.
const ZK_FLOOR_PREFIX: &str = "/lockkit-bench-floor/lock-";

/// The ZooKeeper connect string (`host:port[,host:port…]`) in a `zk://` URL. The floor
/// needs only the servers: credentials before an `@`, a chroot path and query options
/// are dropped (the floor works at the root, under [`ZK_FLOOR_PARENT`]).
fn zk_hosts(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("zk://")?;
    let rest = rest.split(['?', '/']).next().unwrap_or(rest);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, hosts)| hosts);
    (!rest.is_empty()).then_some(rest)
}

/// The compare-and-delete every hand-rolled Redis lock sends on release.
const REDIS_DEL_IF_OWNER: &str =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

const FLOOR_TABLE_PG: &str = "CREATE TABLE IF NOT EXISTS lockkit_bench_floor (name TEXT PRIMARY KEY, owner TEXT, fence BIGINT NOT NULL, expires_at TIMESTAMPTZ NOT NULL)";
const FLOOR_TABLE_MY: &str = "CREATE TABLE IF NOT EXISTS lockkit_bench_floor (name VARCHAR(64) PRIMARY KEY, owner CHAR(32), fence BIGINT NOT NULL, expires_at DATETIME(6) NOT NULL) ENGINE=InnoDB";

impl Floor {
    async fn new(url: &str) -> Result<Option<(Floor, &'static str)>, LockError> {
        if url.starts_with("mem:") {
            return Ok(Some((
                Floor::Mem(Mutex::default()),
                "insert + remove in a Mutex<HashMap>",
            )));
        }
        let backend = |e| LockError::backend("bench-floor", e);
        if url.starts_with("postgres") {
            let (url, _) = url.split_once('?').unwrap_or((url, ""));
            let pool = sqlx::postgres::PgPoolOptions::new()
                .max_connections(4)
                .connect(url)
                .await
                .map_err(|e| LockError::connection("postgres", e))?;
            sqlx::query(FLOOR_TABLE_PG)
                .execute(&pool)
                .await
                .map_err(backend)?;
            return Ok(Some((
                Floor::Postgres(pool),
                "raw INSERT … ON CONFLICT … RETURNING + UPDATE via sqlx, same server",
            )));
        }
        if url.starts_with("redis://") {
            let (url, _) = url.split_once('?').unwrap_or((url, ""));
            let conn = redis::Client::open(url)
                .map_err(|e| LockError::connection("redis", e))?
                .get_multiplexed_async_connection()
                .await
                .map_err(|e| LockError::connection("redis", e))?;
            return Ok(Some((
                Floor::Redis(conn, redis::Script::new(REDIS_DEL_IF_OWNER)),
                "raw SET NX PX + EVALSHA compare-and-delete (two round trips), same server",
            )));
        }
        if url.starts_with("etcd://") || url.starts_with("etcds://") {
            // A client of its own (as the floor of every backend has), set up from
            // the same URL: endpoints, credentials, TLS.
            let driver =
                lockkit::etcd::EtcdDriver::connect(lockkit::etcd::EtcdOptions::from_url(url)?)
                    .await?;
            return Ok(Some((
                Floor::Etcd(Box::new(driver.client().clone())),
                "raw txn (put if create_revision = 0, else get) + delete, same server",
            )));
        }
        if url.starts_with("zk://") {
            let hosts = zk_hosts(url)
                .ok_or_else(|| LockError::Config(format!("no host:port in {}", redact_url(url))))?;
            let client = zookeeper_client::Client::connect(hosts)
                .await
                .map_err(|e| LockError::connection("zookeeper", e))?;
            let parent = zookeeper_client::CreateMode::Persistent
                .with_acls(zookeeper_client::Acls::anyone_all());
            match client.create(ZK_FLOOR_PARENT, &[], &parent).await {
                Ok(_) | Err(zookeeper_client::Error::NodeExists) => {}
                Err(e) => return Err(LockError::backend("zookeeper", e)),
            }
            return Ok(Some((
                Floor::Zk(client),
                "raw create(ephemeral sequential) + getChildren + delete via zookeeper-client, same server",
            )));
        }
        if url.starts_with("mysql") || url.starts_with("mariadb") {
            let url = url.replacen("mariadb://", "mysql://", 1);
            let (url, _) = url.split_once('?').unwrap_or((&url, ""));
            let pool = sqlx::mysql::MySqlPoolOptions::new()
                .max_connections(4)
                .connect(url)
                .await
                .map_err(|e| LockError::connection("mysql", e))?;
            sqlx::query(FLOOR_TABLE_MY)
                .execute(&pool)
                .await
                .map_err(backend)?;
            sqlx::query(
                "INSERT IGNORE INTO lockkit_bench_floor VALUES ('bench/floor', NULL, 0, NOW(6))",
            )
            .execute(&pool)
            .await
            .map_err(backend)?;
            return Ok(Some((
                Floor::MySql(pool),
                "raw UPDATE … LAST_INSERT_ID(fence + 1) + UPDATE via sqlx, same server",
            )));
        }
        let Ok(opts) = lockkit::sqlite::SqliteOptions::from_url(url) else {
            return Ok(None);
        };
        let Some(path) = opts.path() else {
            return Ok(None);
        };
        let connect = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(5));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(connect)
            .await
            .map_err(|e| LockError::connection("sqlite", e))?;
        sqlx::query("CREATE TABLE IF NOT EXISTS lockkit_bench_floor (name TEXT PRIMARY KEY NOT NULL, owner TEXT, fence INTEGER NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID")
            .execute(&pool)
            .await
            .map_err(|e| LockError::backend("sqlite", e))?;
        Ok(Some((
            Floor::Sqlite(pool),
            "raw upsert ... RETURNING + UPDATE via sqlx, same file and pool settings",
        )))
    }

    async fn lock_release(&self, i: u64) -> Result<(), LockError> {
        let err = |e| LockError::backend("bench-floor", e);
        let owner = format!("{i:032x}");
        match self {
            Floor::Redis(conn, del) => {
                let mut conn = conn.clone();
                let rerr = |e| LockError::backend("redis", e);
                let _: Option<String> = redis::cmd("SET")
                    .arg("bench/floor")
                    .arg(&owner)
                    .arg("NX")
                    .arg("PX")
                    .arg(30_000)
                    .query_async(&mut conn)
                    .await
                    .map_err(rerr)?;
                let _: i64 = del
                    .key("bench/floor")
                    .arg(&owner)
                    .invoke_async(&mut conn)
                    .await
                    .map_err(rerr)?;
                Ok(())
            }
            Floor::Etcd(client) => {
                use etcd_client::{Compare, CompareOp, Txn, TxnOp};
                let rerr = |e| LockError::backend("etcd", e);
                let mut kv = client.kv_client();
                let key = format!("bench/floor/{owner}");
                let txn = Txn::new()
                    .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
                    .and_then([TxnOp::put(key.as_str(), owner.as_str(), None)])
                    .or_else([TxnOp::get(key.as_str(), None)]);
                kv.txn(txn).await.map_err(rerr)?;
                kv.delete(key, None).await.map_err(rerr)?;
                Ok(())
            }
            Floor::Zk(client) => {
                let zerr = |e| LockError::backend("zookeeper", e);
                let node = zookeeper_client::CreateMode::EphemeralSequential
                    .with_acls(zookeeper_client::Acls::anyone_all());
                let (_, seq) = client
                    .create(ZK_FLOOR_PREFIX, &[], &node)
                    .await
                    .map_err(zerr)?;
                // A hand-rolled lock holds it when its node sorts first among the
                // children (sequence numbers are zero-padded to a fixed width). The
                // floor only lists them: a stale node of an earlier, crashed run (until
                // its session expires) must not stop the measurement.
                let children = client.list_children(ZK_FLOOR_PARENT).await.map_err(zerr)?;
                let ours = format!("lock-{seq}");
                let _first = children.iter().min().is_some_and(|c| *c == ours);
                client
                    .delete(&format!("{ZK_FLOOR_PREFIX}{seq}"), None)
                    .await
                    .map_err(zerr)?;
                Ok(())
            }
            Floor::Postgres(pool) => {
                let _: Option<i64> = sqlx::query_scalar(
                    "INSERT INTO lockkit_bench_floor AS l (name, owner, fence, expires_at)
                     VALUES ('bench/floor', $1, 1, clock_timestamp() + interval '30 seconds')
                     ON CONFLICT (name) DO UPDATE SET fence = l.fence + 1, owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
                     WHERE l.owner IS NULL OR l.expires_at <= clock_timestamp() RETURNING fence",
                )
                .bind(&owner)
                .fetch_optional(pool)
                .await
                .map_err(err)?;
                sqlx::query("UPDATE lockkit_bench_floor SET owner = NULL, expires_at = '-infinity' WHERE name = 'bench/floor' AND owner = $1")
                    .bind(&owner)
                    .execute(pool)
                    .await
                    .map_err(err)?;
                Ok(())
            }
            Floor::MySql(pool) => {
                sqlx::query(
                    "UPDATE lockkit_bench_floor SET fence = LAST_INSERT_ID(fence + 1), owner = ?, expires_at = NOW(6) + INTERVAL 30 SECOND
                     WHERE name = 'bench/floor' AND (owner IS NULL OR expires_at <= NOW(6))",
                )
                .bind(&owner)
                .execute(pool)
                .await
                .map_err(err)?;
                sqlx::query("UPDATE lockkit_bench_floor SET owner = NULL WHERE name = 'bench/floor' AND owner = ?")
                    .bind(&owner)
                    .execute(pool)
                    .await
                    .map_err(err)?;
                Ok(())
            }
            Floor::Mem(map) => {
                let mut m = map.lock().unwrap_or_else(|e| e.into_inner());
                m.insert("bench/floor".to_string(), u128::from(i));
                m.remove("bench/floor");
                Ok(())
            }
            Floor::Sqlite(pool) => {
                let _: Option<i64> = sqlx::query_scalar(
                    "INSERT INTO lockkit_bench_floor (name, owner, fence, expires_at) VALUES ('bench/floor', ?1, 1, ?2)
                     ON CONFLICT(name) DO UPDATE SET fence = fence + 1, owner = excluded.owner, expires_at = excluded.expires_at
                     WHERE owner IS NULL OR expires_at <= ?3 RETURNING fence",
                )
                .bind(&owner)
                .bind(i64::MAX / 4)
                .bind(0i64)
                .fetch_optional(pool)
                .await
                .map_err(err)?;
                sqlx::query("UPDATE lockkit_bench_floor SET owner = NULL, expires_at = 0 WHERE name = 'bench/floor' AND owner = ?1 AND expires_at > ?2")
                    .bind(&owner)
                    .bind(0i64)
                    .execute(pool)
                    .await
                    .map_err(err)?;
                Ok(())
            }
        }
    }
}

fn histogram() -> Result<Histogram<u64>, LockError> {
    Histogram::new_with_bounds(1, 60_000_000, 3)
        .map_err(|e| LockError::Config(format!("histogram: {e}")))
}

async fn time_one<F, Fut>(h: &mut Histogram<u64>, f: F) -> Result<Duration, LockError>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<(), LockError>>,
{
    let t = Instant::now();
    f().await?;
    let d = t.elapsed();
    let _ = h.record((d.as_micros() as u64).max(1));
    Ok(d)
}

fn summary(h: &Histogram<u64>, total: Duration) -> Latency {
    Latency {
        p50_us: h.value_at_quantile(0.5),
        p90_us: h.value_at_quantile(0.9),
        p99_us: h.value_at_quantile(0.99),
        max_us: h.max(),
        ops_per_second: h.len() as f64 / total.as_secs_f64().max(1e-9),
    }
}

/// Release → grant latency to a waiter on another connection, `n` times.
async fn handoffs(url: &str, n: u64) -> Result<Option<Latency>, LockError> {
    if n == 0 {
        return Ok(None);
    }
    let holder = lockkit::connect(url).await?;
    let waiter = lockkit::connect(url).await?;
    let key = "bench/handoff";
    let mut h = histogram()?;
    let mut total = Duration::ZERO;
    for _ in 0..n {
        let held = holder.lock(key).wait(Duration::from_secs(10)).await?;
        let w = waiter.clone();
        let waiting = tokio::spawn(async move {
            let g = w.lock(key).wait(Duration::from_secs(10)).await;
            (Instant::now(), g)
        });
        // Let the waiter reach its wait before the release (a benchmark settle, not
        // a correctness assumption: a late waiter only measures lower).
        tokio::time::sleep(Duration::from_millis(20)).await;
        let released = Instant::now();
        held.release().await?;
        let (granted, g) = waiting
            .await
            .map_err(|e| LockError::Config(format!("hand-off waiter crashed: {e}")))?;
        let g = g?;
        let d = granted.saturating_duration_since(released);
        total += d;
        let _ = h.record((d.as_micros() as u64).max(1));
        g.release().await?;
    }
    Ok(Some(summary(&h, total)))
}

pub(crate) async fn run(args: Args) -> Result<ExitCode, LockError> {
    let locker = lockkit::connect(&args.url).await?;
    let floor = Floor::new(&args.url).await?;
    let key = "bench/lockkit";
    let (mut lk, mut fl) = (histogram()?, histogram()?);
    let (mut lk_total, mut fl_total) = (Duration::ZERO, Duration::ZERO);
    let lock_release = || async {
        let g = locker.try_lock(key).await?;
        g.release().await
    };
    for i in 0..100 {
        lock_release().await?;
        if let Some((f, _)) = &floor {
            f.lock_release(i).await?;
        }
    }
    let bar = if args.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(args.iterations)
    };
    for i in 0..args.iterations {
        lk_total += time_one(&mut lk, lock_release).await?;
        if let Some((f, _)) = &floor {
            fl_total += time_one(&mut fl, || f.lock_release(i)).await?;
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let lockkit = summary(&lk, lk_total);
    let floor_latency = floor.as_ref().map(|_| summary(&fl, fl_total));
    let ratio = floor_latency
        .as_ref()
        .map(|f| lockkit.p50_us as f64 / f.p50_us.max(1) as f64);
    let handoff = handoffs(&args.url, args.handoffs).await?;
    let queue = queue(&args.url, args.waiters).await?;
    let report = BenchReport {
        backend: redact_url(&args.url),
        iterations: args.iterations,
        lockkit,
        floor: floor_latency,
        floor_description: floor
            .as_ref()
            .map_or("no floor for this backend yet", |(_, d)| d),
        p50_ratio_lockkit_over_floor: ratio,
        handoff,
        queue,
    };
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "uncontended lock+release on {} ({} iterations)",
        report.backend, report.iterations
    );
    println!(
        "  {:8} {:>8} {:>8} {:>8} {:>8} {:>10}",
        "", "p50 µs", "p90 µs", "p99 µs", "max µs", "ops/s"
    );
    let row = |name: &str, l: &Latency| {
        println!(
            "  {name:8} {:>8} {:>8} {:>8} {:>8} {:>10.0}",
            l.p50_us, l.p90_us, l.p99_us, l.max_us, l.ops_per_second
        );
    };
    row("lockkit", &report.lockkit);
    if let Some(f) = &report.floor {
        row("floor", f);
    }
    println!("  floor: {}", report.floor_description);
    if let Some(r) = report.p50_ratio_lockkit_over_floor {
        println!("  p50 lockkit/floor = {r:.2}");
    }
    if let Some(h) = &report.handoff {
        println!(
            "contended hand-off (release → grant on another connection, {} times)",
            args.handoffs
        );
        row("handoff", h);
    }
    if let Some(q) = &report.queue {
        println!("queue of {} waiters, each on its own connection", q.waiters);
        row("handoff", &q.handoff);
        if let (Some(c), Some(all)) = (q.commands_per_handoff, q.all_commands_per_handoff) {
            println!(
                "  requests per hand-off: {c:.2} (server commands incl. inside scripts: {all:.1})"
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)] // Tests fail by panicking.
mod tests {
    use super::*;

    #[test]
    fn zk_hosts_keeps_only_the_servers() {
        assert_eq!(zk_hosts("zk://127.0.0.1:2181"), Some("127.0.0.1:2181"));
        assert_eq!(
            zk_hosts("zk://a:1,b:2,c:3/chroot/x?session_timeout=5s"),
            Some("a:1,b:2,c:3")
        );
        assert_eq!(zk_hosts("zk://u:p@a:1?x=y"), Some("a:1"));
        assert_eq!(zk_hosts("zk://"), None);
        assert_eq!(zk_hosts("zk:///chroot"), None);
        assert_eq!(zk_hosts("etcd://a:1"), None);
    }

    /// The ZooKeeper floor against a running server:
    /// `LOCKKIT_BENCH_ZK=zk://127.0.0.1:PORT cargo test -p lockkit-cli -- --ignored zk_floor`.
    #[tokio::test]
    #[ignore = "needs a ZooKeeper server in LOCKKIT_BENCH_ZK"]
    async fn zk_floor_leaves_no_lock_node_behind() {
        let url = std::env::var("LOCKKIT_BENCH_ZK").unwrap();
        let (floor, description) = Floor::new(&url).await.unwrap().unwrap();
        assert!(
            description.contains("ephemeral sequential"),
            "{description}"
        );
        for i in 0..50 {
            floor.lock_release(i).await.unwrap();
        }
        let Floor::Zk(client) = &floor else {
            panic!("not the ZooKeeper floor")
        };
        assert_eq!(
            client.list_children(ZK_FLOOR_PARENT).await.unwrap(),
            Vec::<String>::new()
        );
        // A second floor (another session) finds the parent in place.
        Floor::new(&url)
            .await
            .unwrap()
            .unwrap()
            .0
            .lock_release(0)
            .await
            .unwrap();
    }
}
