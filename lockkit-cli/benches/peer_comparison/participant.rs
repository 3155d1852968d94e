//! The Rust sides of the peer protocol (bench/peers/README.md): lockkit itself and
//! rslock, each run as a child process of the runner (`peer_comparison participant NAME …`) like
//! the Python and Java peers, so every library is timed in a process of its own.

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Acquires wait at most this long.
const WAIT: Duration = Duration::from_secs(30);
/// Warm-up pairs before the uncontended measurement.
const WARMUP: usize = 200;
/// After the go: time for every waiter to make its first attempt and block (a
/// benchmark settle: a late waiter only makes its own hand-off look faster).
const SETTLE: Duration = Duration::from_millis(300);
/// rslock's lease, as in its README; lockkit's fixed lease is the same.
const RSLOCK_TTL: Duration = Duration::from_secs(10);

use crate::raw_bell::RawBell;
use crate::transaction_locks::{TxClient, TxHold};

type Failure = Box<dyn std::error::Error + Send + Sync>;

/// One client of a library: its own connection(s).
#[derive(Clone)]
enum Client {
    Lockkit(lockkit::Locker),
    /// lockkit with a fixed lease, no watchdog: the reference that shows what
    /// the watchdog costs.
    LockkitLease(lockkit::Locker),
    /// lockkit's other primitives.
    LockkitPrimitive(lockkit::Locker, Primitive),
    /// lockkit's election: a candidate campaigns; leading is holding.
    LockkitElection(lockkit::Locker),
    /// lockkit's fair request ([`lockkit::LockRequest::fair`]).
    LockkitFair(lockkit::Locker),
    /// lockkit's `lock_all` of two keys: the key and `KEY-2`.
    LockkitTwoKeys(lockkit::Locker),
    /// The same two keys as two locks, one after the other: what `lock_all`
    /// does where the backend cannot take them at once.
    LockkitTwoLocks(lockkit::Locker),
    /// A lock in the application's own transaction.
    LockkitTransaction(TxClient),
    Rslock(rslock::LockManager),
    /// A server's own hand-off floor (see [`crate::raw_bell`]).
    RawBell(RawBell),
}

/// A primitive other than the mutex.
#[derive(Clone, Copy)]
enum Primitive {
    /// A permit of a semaphore of [`PERMITS`].
    Semaphore,
    Read,
    Write,
}

/// Permits of the measured semaphores (every library's).
const PERMITS: u32 = 4;

/// A held lock.
enum Hold {
    Lockkit(lockkit::LockGuard),
    Leading(lockkit::Leadership),
    Several(lockkit::MultiLockGuard),
    Pair(lockkit::LockGuard, lockkit::LockGuard),
    Transaction(TxHold),
    Rslock(rslock::Lock),
    RawBell(RawBell, String),
}

impl Client {
    /// `lockkit URL`, `lockkit-lease URL`, `lockkit-semaphore URL`, `lockkit-read
    /// URL`, `lockkit-write URL`, `lockkit-election URL`, `lockkit-fair URL`,
    /// `lockkit-two-keys URL`, `lockkit-two-locks URL`, `lockkit-transaction URL`,
    /// `lockkit-transaction-advisory URL`, `rslock
    /// HOST:PORT[,HOST:PORT…]` (one master, or Redlock's N), `raw-mysql-bell
    /// URL` or `raw-postgres-bell URL`.
    async fn connect(library: &str, target: &str) -> Result<Self, Failure> {
        match library {
            "lockkit" => Ok(Self::Lockkit(lockkit::connect(target).await?)),
            "lockkit-lease" => Ok(Self::LockkitLease(lockkit::connect(target).await?)),
            "lockkit-election" => Ok(Self::LockkitElection(lockkit::connect(target).await?)),
            "lockkit-fair" => Ok(Self::LockkitFair(lockkit::connect(target).await?)),
            "lockkit-two-keys" => Ok(Self::LockkitTwoKeys(lockkit::connect(target).await?)),
            "lockkit-two-locks" => Ok(Self::LockkitTwoLocks(lockkit::connect(target).await?)),
            "lockkit-transaction" | "lockkit-transaction-advisory" => {
                let advisory = library.ends_with("advisory");
                Ok(Self::LockkitTransaction(
                    TxClient::connect(target, advisory).await?,
                ))
            }
            "lockkit-semaphore" | "lockkit-read" | "lockkit-write" => {
                let primitive = match library {
                    "lockkit-semaphore" => Primitive::Semaphore,
                    "lockkit-read" => Primitive::Read,
                    _ => Primitive::Write,
                };
                Ok(Self::LockkitPrimitive(
                    lockkit::connect(target).await?,
                    primitive,
                ))
            }
            "rslock" => {
                let uris: Vec<String> = target.split(',').map(|a| format!("redis://{a}")).collect();
                let clients = uris
                    .iter()
                    .map(|u| redis::Client::open(u.as_str()))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Self::Rslock(rslock::LockManager::from_clients(clients)))
            }
            "raw-mysql-bell" => Ok(Self::RawBell(RawBell::connect_mysql(target).await?)),
            "raw-postgres-bell" => Ok(Self::RawBell(RawBell::connect_postgres(target).await?)),
            other => Err(format!("no Rust participant named {other}").into()),
        }
    }

    async fn acquire(&self, key: &str) -> Result<Hold, Failure> {
        match self {
            Self::Lockkit(locker) => Ok(Hold::Lockkit(locker.lock(key).wait(WAIT).await?)),
            Self::LockkitLease(locker) => Ok(Hold::Lockkit(
                locker.lock(key).lease(RSLOCK_TTL).wait(WAIT).await?,
            )),
            Self::LockkitPrimitive(locker, primitive) => Ok(Hold::Lockkit(match primitive {
                Primitive::Semaphore => {
                    let semaphore = locker.semaphore(key, PERMITS);
                    semaphore.acquire().wait(WAIT).await?
                }
                Primitive::Read => locker.read_lock(key).wait(WAIT).await?,
                Primitive::Write => locker.write_lock(key).wait(WAIT).await?,
            })),
            Self::LockkitFair(locker) => {
                Ok(Hold::Lockkit(locker.lock(key).fair().wait(WAIT).await?))
            }
            Self::LockkitTwoKeys(locker) => Ok(Hold::Several(
                locker
                    .lock_all([key.to_owned(), format!("{key}-2")])
                    .wait(WAIT)
                    .await?,
            )),
            Self::LockkitTwoLocks(locker) => {
                let first = locker.lock(key).wait(WAIT).await?;
                let second = locker.lock(format!("{key}-2")).wait(WAIT).await?;
                Ok(Hold::Pair(first, second))
            }
            Self::LockkitTransaction(client) => Ok(Hold::Transaction(client.acquire(key).await?)),
            Self::LockkitElection(locker) => {
                let election = locker.election(key);
                let leading = tokio::time::timeout(WAIT, election.campaign("proposal")).await??;
                Ok(Hold::Leading(leading))
            }
            // rslock's blocking acquire: retries until it holds (its default retry
            // count and delay).
            Self::Rslock(manager) => Ok(Hold::Rslock(
                tokio::time::timeout(WAIT, manager.acquire_no_guard(key, RSLOCK_TTL)).await??,
            )),
            Self::RawBell(raw) => {
                raw.acquire(key).await?;
                Ok(Hold::RawBell(raw.clone(), key.to_owned()))
            }
        }
    }
}

impl Hold {
    async fn release(self) -> Result<(), Failure> {
        match self {
            Self::Lockkit(guard) => Ok(guard.release().await?),
            Self::Leading(leading) => Ok(leading.resign().await?),
            Self::Several(guard) => Ok(guard.release().await?),
            Self::Pair(first, second) => {
                first.release().await?;
                Ok(second.release().await?)
            }
            Self::Transaction(tx) => tx.release().await,
            Self::Rslock(lock) => {
                lock.release().await;
                Ok(())
            }
            Self::RawBell(raw, key) => raw.release(&key).await,
        }
    }
}

/// One measurement on stdout: raw nanoseconds, as the runner reads them.
fn emit(ns: &[u128]) -> Result<(), Failure> {
    emit_line(&serde_json::json!({ "ns": ns }))
}

/// One line of JSON on stdout, flushed.
fn emit_line(line: &serde_json::Value) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    Ok(out.flush()?)
}

/// One round's hand-offs on stdout, timed from each release's return and start.
fn emit_handoffs(ns: &[u128], from_release_start_ns: &[u128]) -> Result<(), Failure> {
    emit_line(&serde_json::json!({ "ns": ns, "from_release_start_ns": from_release_start_ns }))
}

/// One client, one key, kept for the whole session: 200 warm-up pairs, `ready`,
/// then for each line `N` on stdin, `N` acquire + release pairs, each timed,
/// printed as one measurement; it ends at the end of stdin. Long-lived, so that
/// the runner can interleave libraries batch by batch.
async fn pairs(client: &Client) -> Result<(), Failure> {
    let key = "peers/rust/u";
    for _ in 0..WARMUP {
        client.acquire(key).await?.release().await?;
    }
    println!("ready");
    std::io::stdout().flush()?;
    for line in std::io::stdin().lock().lines() {
        let n: usize = line?.trim().parse()?;
        let mut ns = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            client.acquire(key).await?.release().await?;
            ns.push(t.elapsed().as_nanos());
        }
        emit(&ns)?;
    }
    Ok(())
}

/// Rounds of: a holder holds; on `go` the waiters queue; the holder releases and each
/// waiter, granted in turn, releases at once. A hand-off is the time from one release
/// returning to the next acquire returning in another task; it is also timed from
/// the release's start (`from_release_start_ns`), which a grant cannot precede.
async fn handoff(
    library: &str,
    target: &str,
    waiters: usize,
    rounds: usize,
) -> Result<(), Failure> {
    let key = format!("peers/rust/h{waiters}");
    let holder = Client::connect(library, target).await?;
    let mut clients = Vec::with_capacity(waiters);
    for _ in 0..waiters {
        clients.push(Client::connect(library, target).await?);
    }
    let mut stdin = std::io::stdin().lock();
    for _ in 0..rounds {
        let held = holder.acquire(&key).await?;
        println!("ready");
        std::io::stdout().flush()?;
        let mut line = String::new();
        stdin.read_line(&mut line)?;
        if line.trim() != "go" {
            return Err(format!("expected go, read {line:?}").into());
        }
        let events = Arc::new(Mutex::new(Vec::with_capacity(waiters)));
        let mut tasks = Vec::with_capacity(waiters);
        for client in &clients {
            let (client, key, events) = (client.clone(), key.clone(), events.clone());
            tasks.push(tokio::spawn(async move {
                let mine = client.acquire(&key).await?;
                let granted = Instant::now();
                mine.release().await?;
                let released = Instant::now();
                events
                    .lock()
                    .map_err(|_| "a waiter panicked")?
                    .push((granted, released));
                Ok::<_, Failure>(())
            }));
        }
        tokio::time::sleep(SETTLE).await;
        let mut started = Instant::now();
        held.release().await?;
        let mut previous = Instant::now();
        for task in tasks {
            task.await??;
        }
        let mut events = std::mem::take(&mut *events.lock().map_err(|_| "a waiter panicked")?);
        events.sort();
        let (mut gaps, mut from_start) = (Vec::new(), Vec::new());
        // A waiter's release starts as it is granted.
        for (granted, released) in events {
            gaps.push(granted.saturating_duration_since(previous).as_nanos());
            from_start.push(granted.saturating_duration_since(started).as_nanos());
            (previous, started) = (released, granted);
        }
        emit_handoffs(&gaps, &from_start)?;
    }
    Ok(())
}

/// `participant LIBRARY TARGET pairs` or `… handoff WAITERS ROUNDS`.
pub(crate) async fn run(args: &[String]) -> Result<(), Failure> {
    let number = |i: usize| -> Result<usize, Failure> {
        Ok(args.get(i).ok_or("missing argument")?.parse::<usize>()?)
    };
    match args {
        [library, target, mode] if mode == "pairs" => {
            let client = Client::connect(library, target).await?;
            pairs(&client).await
        }
        [library, target, mode, ..] if mode == "handoff" => {
            handoff(library, target, number(3)?, number(4)?).await
        }
        _ => Err("usage: participant LIBRARY TARGET pairs | handoff WAITERS ROUNDS".into()),
    }
}
