//! The reliability suite: every backend under every fault, judged from recorded
//! histories.
//!
//! Each test starts real servers through the testkit (the Consul stand-in for
//! Consul), runs three workers (each with its own connections) through
//! acquire → fenced write → hold → fenced write → release on one key, injects one
//! fault, lets the workers recover, and checks the history
//! ([`lockkit_conformance::history::check`]): stale writes rejected and accepted,
//! token order, overlapping holds, and the time from the fault's end to the next
//! grant. Where the README promises safety under the fault, the test fails on any
//! violation; where it documents a weakness (Redis restarted without persistence),
//! the test shows the weakness.
//!
//! With `LOCKKIT_RELIABILITY_DIR` set, each test also writes its row there as JSON;
//! `ci/reliability` runs the suite that way and renders RELIABILITY.md.

#![cfg(feature = "all-drivers")]
#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit::Locker;
use lockkit_conformance::history::{
    self, FencedResource, History, Recorder, Running, Verdict, Workload,
};
use lockkit_conformance::holder::{self, HolderProcess};
use lockkit_testkit::{
    ConsulStandIn, Etcd, EtcdCluster, Fault, FaultProxy, MariaDb, Postgres, Redis, RedisMasters,
    StandInOptions, ZooKeeper, ZooKeeperEnsemble,
};
use tokio::time::{Instant, sleep, timeout};

/// Workers per test.
const CLIENTS: usize = 3;
/// The workers' (and the outside holder's) watchdog TTL.
const TTL: Duration = Duration::from_secs(1);
/// How long a server is paused or partitioned away: past the TTL, so leases run out.
const OUTAGE: Duration = Duration::from_millis(2500);
/// How long a killed server stays down before it is restarted.
const DOWNTIME: Duration = Duration::from_secs(1);
/// How long the workers run before the fault, and again after they have recovered.
const STEADY: Duration = Duration::from_secs(1);
/// The longest a test waits for the lock to be granted again after a fault.
const RECOVERY_LIMIT: Duration = Duration::from_secs(30);
/// The longest the workers run at all.
const RUN_LIMIT: Duration = Duration::from_secs(90);

/// What the README promises for a backend under a fault.
#[derive(Debug, Clone, Copy)]
enum Promise {
    /// No stale write accepted, tokens strictly increasing, no overlapping holds.
    Safe,
    /// A documented weakness: the test records what happens and asserts the part
    /// the README describes.
    Documented(&'static str),
}

/// One backend under one fault: the history being recorded and the workers.
struct Trial {
    backend: &'static str,
    fault: &'static str,
    key: String,
    hold: Duration,
    recorder: Recorder,
    resource: FencedResource,
}

impl Trial {
    fn new(backend: &'static str, fault: &'static str) -> Self {
        let recorder = Recorder::new();
        Self {
            backend,
            fault,
            key: format!("reliability/{}", fault.replace(' ', "-")),
            hold: history::DEFAULT_HOLD,
            resource: FencedResource::new(recorder.clone()),
            recorder,
        }
    }

    /// Connects the workers (each its own driver) to `url` and starts them, then
    /// lets them run for [`STEADY`] once they have been granted the lock a few times.
    async fn start_workers(&self, url: &str) -> Running {
        let mut lockers = Vec::new();
        for _ in 0..CLIENTS {
            let driver = lockkit::driver::connect(url)
                .await
                .unwrap_or_else(|e| panic!("{}: connecting a worker: {e}", self.backend));
            lockers.push(Locker::new(driver));
        }
        let mut workload = Workload::new(self.key.clone(), RUN_LIMIT);
        workload.ttl = TTL;
        workload.hold = self.hold;
        let running = workload.start(lockers, &self.recorder, &self.resource);
        self.wait_until("three grants before the fault", |h| h.grants.len() >= 3)
            .await;
        sleep(STEADY).await;
        running
    }

    /// Polls the history (every 10 ms, at most [`RECOVERY_LIMIT`]) until `done`.
    async fn wait_until(&self, what: &str, done: impl Fn(&History) -> bool) {
        let limit = Instant::now() + RECOVERY_LIMIT;
        while !self.recorder.inspect(&done) {
            assert!(
                Instant::now() < limit,
                "{} / {}: no {what} within {RECOVERY_LIMIT:?}; failures: {:?}",
                self.backend,
                self.fault,
                last_failures(&self.recorder.history())
            );
            sleep(Duration::from_millis(10)).await;
        }
    }

    /// Waits for a grant after `healed` that has written, lets the workers run for
    /// [`STEADY`] more, stops them, checks
    /// the history against `promise`, and writes the row.
    async fn finish(
        self,
        running: Running,
        started: Instant,
        healed: Instant,
        promise: Promise,
    ) -> Verdict {
        self.wait_until("grant and write after the fault", |h| {
            h.written_after(healed)
        })
        .await;
        sleep(STEADY).await;
        running.stop().await;
        let history = self.recorder.history();
        let verdict = history::check(&history);
        let recovery = history
            .first_grant_after(healed)
            .map(|g| g.granted - healed)
            .expect("waited for it above");
        eprintln!(
            "{} / {}: {verdict:?}, fault {:?}, recovered {recovery:?} after it ended",
            self.backend,
            self.fault,
            healed - started
        );
        write_row(&self, &verdict, healed - started, recovery, promise);
        if let Promise::Safe = promise {
            assert!(
                verdict.is_safe(),
                "{} / {}: the history breaks a promise: {verdict:?}",
                self.backend,
                self.fault
            );
        }
        verdict
    }
}

/// The first release failure and the last three failures, for a failure message.
fn last_failures(h: &History) -> Vec<String> {
    let first_release = h.failures.iter().find(|f| f.operation == "release");
    first_release
        .into_iter()
        .chain(h.failures.iter().rev().take(3))
        .map(|f| format!("{} {}", f.operation, f.error))
        .collect()
}

fn write_row(trial: &Trial, v: &Verdict, fault: Duration, recovery: Duration, promise: Promise) {
    let Ok(dir) = std::env::var("LOCKKIT_RELIABILITY_DIR") else {
        return;
    };
    let row = serde_json::json!({
        "backend": trial.backend,
        "fault": trial.fault,
        "verdict": v,
        "fault_ms": fault.as_millis() as u64,
        "recovery_ms": recovery.as_millis() as u64,
        "documented": match promise { Promise::Safe => None, Promise::Documented(why) => Some(why) },
    });
    std::fs::create_dir_all(&dir).unwrap();
    let file = format!("{}--{}.json", trial.backend, trial.fault.replace(' ', "-"));
    std::fs::write(
        std::path::Path::new(&dir).join(file),
        serde_json::to_vec_pretty(&row).unwrap(),
    )
    .unwrap();
}

// ---------------------------------------------------------------------------------
// Holder faults: an outside holder process, stopped or killed while it holds.

/// The command that re-runs this test binary as a holder child.
fn holder_command() -> std::process::Command {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "holder_process_entry",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    cmd
}

/// Entry point of the holder child; does nothing unless started by a holder fault.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child-process entry point for the holder faults"]
async fn holder_process_entry() {
    holder::child_main(|url: String| async move { lockkit::driver::connect(&url).await }).await;
}

/// A holder process takes the lock (queuing with the workers) and is frozen with
/// SIGSTOP past its lease. Once a worker has been granted the lock and written,
/// the holder is thawed and makes the write it was about to make: the resource
/// must refuse it, and the holder must be told its lock is lost.
async fn holder_paused(backend: &'static str, url: &str) {
    let trial = Trial::new(backend, "holder paused past its lease");
    let running = trial.start_workers(url).await;
    let invoked = Instant::now();
    let (mut holder, token) = HolderProcess::start(holder_command(), url, &trial.key, TTL)
        .await
        .unwrap_or_else(|e| panic!("{backend}: {e}"));
    let granted = Instant::now();
    holder.stop().unwrap();
    let stopped = Instant::now();
    let grant = trial.recorder.grant(CLIENTS, token, invoked, granted);
    trial.recorder.held_until(grant, stopped);
    trial
        .wait_until("worker grant and write after the stop", |h| {
            h.written_after(stopped)
        })
        .await;
    holder.resume().unwrap();
    let accepted = trial.resource.write(grant, token);
    assert!(
        !accepted,
        "{backend}: the thawed holder's stale write (token {token}) was accepted"
    );
    let told = timeout(Duration::from_secs(10), holder.line(holder::LOST)).await;
    assert!(
        matches!(told, Ok(Some(_))),
        "{backend}: the thawed holder was not told its lock was lost within 10 s"
    );
    holder.kill().await;
    trial.finish(running, stopped, stopped, Promise::Safe).await;
}

/// A holder process takes the lock and is killed with SIGKILL: the lock is granted
/// again (after the lease, or at once where the backend sees the session end).
async fn holder_killed(backend: &'static str, url: &str) {
    let trial = Trial::new(backend, "holder killed");
    let running = trial.start_workers(url).await;
    let invoked = Instant::now();
    let (holder, token) = HolderProcess::start(holder_command(), url, &trial.key, TTL)
        .await
        .unwrap_or_else(|e| panic!("{backend}: {e}"));
    let granted = Instant::now();
    holder.kill().await;
    let killed = Instant::now();
    let grant = trial.recorder.grant(CLIENTS, token, invoked, granted);
    trial.recorder.held_until(grant, killed);
    trial.finish(running, killed, killed, Promise::Safe).await;
}

// ---------------------------------------------------------------------------------
// Server faults.

/// The server is frozen (SIGSTOP) for [`OUTAGE`], then thawed.
async fn server_paused(backend: &'static str, url: &str, pause: impl Fn(), resume: impl Fn()) {
    let trial = Trial::new(backend, "server paused");
    let running = trial.start_workers(url).await;
    let started = Instant::now();
    pause();
    sleep(OUTAGE).await;
    resume();
    trial
        .finish(running, started, Instant::now(), Promise::Safe)
        .await;
}

/// Every connection between the clients and the server goes through a proxy that
/// black-holes traffic for [`OUTAGE`] (connections stay open; nothing arrives), then
/// forwards again.
async fn partitioned(backend: &'static str, server_port: u16, url: &str) {
    let proxy = FaultProxy::start(server_port).await.unwrap();
    let url = url.replace(
        &format!("127.0.0.1:{server_port}"),
        &format!("127.0.0.1:{}", proxy.port()),
    );
    let trial = Trial::new(backend, "client-server partition");
    let running = trial.start_workers(&url).await;
    let started = Instant::now();
    proxy.set(Fault::BlackHole);
    sleep(OUTAGE).await;
    // Healed: the connections survived (as TCP's do across a short partition) and
    // what was held back is delivered now.
    proxy.set(Fault::Forward);
    trial
        .finish(running, started, Instant::now(), Promise::Safe)
        .await;
}

/// Runs `kill`, waits [`DOWNTIME`], then `restart` (which awaits the server).
macro_rules! server_restarted {
    ($backend:expr, $url:expr, $server:ident, $promise:expr) => {{
        let trial = Trial::new($backend, "server killed and restarted");
        let running = trial.start_workers(&$url).await;
        let started = Instant::now();
        $server.kill();
        sleep(DOWNTIME).await;
        $server.restart().await.unwrap();
        trial
            .finish(running, started, Instant::now(), $promise)
            .await
    }};
}

// ---------------------------------------------------------------------------------
// The backends.

fn sqlite_url(dir: &tempfile::TempDir) -> String {
    format!("sqlite://{}", dir.path().join("locks.db").display())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_holder_paused_past_its_lease() {
    let dir = tempfile::tempdir().unwrap();
    holder_paused("sqlite", &sqlite_url(&dir)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_holder_killed() {
    let dir = tempfile::tempdir().unwrap();
    holder_killed("sqlite", &sqlite_url(&dir)).await;
}

/// The four faults every single-server backend takes, as tests named
/// `<backend>_<fault>`.
macro_rules! single_server_faults {
    ($backend:ident, $start:expr, $url:expr) => {
        mod $backend {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn holder_paused_past_its_lease() {
                let server = $start.await.unwrap();
                holder_paused(stringify!($backend), &$url(&server)).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn holder_killed() {
                let server = $start.await.unwrap();
                super::holder_killed(stringify!($backend), &$url(&server)).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn server_paused() {
                let server = $start.await.unwrap();
                super::server_paused(
                    stringify!($backend),
                    &$url(&server),
                    || server.pause(),
                    || server.resume(),
                )
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn client_server_partition() {
                let server = $start.await.unwrap();
                partitioned(stringify!($backend), server.port(), &$url(&server)).await;
            }
        }
    };
}

single_server_faults!(postgres, Postgres::start(), |s: &Postgres| s.url());
single_server_faults!(mysql, MariaDb::start(), |s: &MariaDb| s.url());
single_server_faults!(redis, Redis::start(), |s: &Redis| s.url());
single_server_faults!(etcd, Etcd::start(), |s: &Etcd| s.url());
single_server_faults!(zookeeper, ZooKeeper::start(), |s: &ZooKeeper| format!(
    "{}?session_timeout_ms=1000",
    s.url()
));
single_server_faults!(
    consul,
    ConsulStandIn::start_with(
        StandInOptions::default().with_min_session_ttl(Duration::from_millis(100))
    ),
    |s: &ConsulStandIn| format!("{}?session_ttl_ms=1000&lock_delay_ms=0", s.url())
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_server_killed_and_restarted() {
    let mut server = Postgres::start().await.unwrap();
    server_restarted!("postgres", server.url(), server, Promise::Safe);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_server_killed_and_restarted() {
    let mut server = MariaDb::start().await.unwrap();
    server_restarted!("mysql", server.url(), server, Promise::Safe);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_server_killed_and_restarted() {
    let mut server = Etcd::start().await.unwrap();
    server_restarted!("etcd", server.url(), server, Promise::Safe);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_server_killed_and_restarted() {
    let mut server = ZooKeeper::start().await.unwrap();
    let url = format!("{}?session_timeout_ms=1000", server.url());
    server_restarted!("zookeeper", url, server, Promise::Safe);
}

/// Redis with `appendfsync always`: a restart keeps locks and counters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_with_fsynced_aof_killed_and_restarted_stays_safe() {
    let mut server = Redis::start_persistent().await.unwrap();
    server_restarted!(
        "redis (appendfsync always)",
        server.url(),
        server,
        Promise::Safe
    );
}

/// How long workers hold the lock in the Redis restart-during-a-hold tests: longer
/// than the restart, so the holder writes again after it.
const HOLD_ACROSS_RESTART: Duration = Duration::from_millis(1500);

/// Redis (no persistence) is killed while a worker holds the lock (holds last
/// [`HOLD_ACROSS_RESTART`] here) and restarted at once, without its data.
async fn redis_restarted_during_a_hold(
    backend: &'static str,
    url: &str,
    server: &mut Redis,
    promise: Promise,
) -> Verdict {
    let mut trial = Trial::new(backend, "restarted while a lock is held");
    trial.hold = HOLD_ACROSS_RESTART;
    let running = trial.start_workers(url).await;
    trial
        .wait_until("a worker holding the lock", |h| {
            h.grants.iter().any(|g| g.held_until.is_none())
        })
        .await;
    let started = Instant::now();
    server.kill();
    server.restart().await.unwrap();
    trial
        .finish(running, started, Instant::now(), promise)
        .await
}

/// Redis without persistence: a restart forgets the lock and the fencing counter.
/// The counter starts again and tokens go backwards; the worker that held the lock
/// through the restart is not told until its next renewal, and its later write is
/// accepted by the resource (it has the higher token) while the new holder's is
/// refused — what the README says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_without_persistence_restarted_resets_the_token_counter() {
    let mut server = Redis::start().await.unwrap();
    let url = server.url();
    let v = redis_restarted_during_a_hold(
        "redis (no persistence)",
        &url,
        &mut server,
        Promise::Documented(
            "a restart without persistence loses locks and fencing counters: tokens \
             start again from 1, so the resource refuses the new holder and accepts the \
             old one",
        ),
    )
    .await;
    assert!(
        !v.token_regressions.is_empty(),
        "the restart should have reset the token counter: {v:?}"
    );
}

/// The mitigation: with `?fence_seed=clock` the counter Redis lost starts again from
/// the server's clock, above every token handed out before, so tokens keep rising and
/// the resource refuses the old holder. The lock itself is still lost: until the old
/// holder's next renewal fails, two clients can believe they hold it (documented).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_without_persistence_restarted_with_clock_seeded_tokens_keeps_tokens_rising() {
    let mut server = Redis::start().await.unwrap();
    let url = format!("{}?fence_seed=clock", server.url());
    let v = redis_restarted_during_a_hold(
        "redis (no persistence, fence_seed=clock)",
        &url,
        &mut server,
        Promise::Documented(
            "a restart without persistence loses the lock; until the old holder's next \
             renewal fails, two clients can believe they hold it (fencing still refuses \
             the old holder)",
        ),
    )
    .await;
    assert!(
        v.token_regressions.is_empty(),
        "tokens went backwards: {v:?}"
    );
    assert_eq!(v.stale_accepted, 0, "{v:?}");
}

// ---------------------------------------------------------------------------------
// Cluster members.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_cluster_leader_killed() {
    let mut cluster = EtcdCluster::start(3).await.unwrap();
    let trial = Trial::new("etcd (3 members)", "leader killed");
    let running = trial.start_workers(&cluster.url()).await;
    let leader = cluster.leader().await.expect("the cluster has a leader");
    let started = Instant::now();
    cluster.members[leader].kill();
    trial
        .finish(running, started, Instant::now(), Promise::Safe)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_ensemble_leader_killed() {
    let mut ensemble = ZooKeeperEnsemble::start(3).await.unwrap();
    let trial = Trial::new("zookeeper (3 members)", "leader killed");
    let url = format!("{}?session_timeout_ms=2000", ensemble.url());
    let running = trial.start_workers(&url).await;
    let leader = ensemble.leader().await.expect("the ensemble has a leader");
    let started = Instant::now();
    ensemble.members[leader].kill();
    trial
        .finish(running, started, Instant::now(), Promise::Safe)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_two_of_five_masters_killed() {
    let mut masters = RedisMasters::start(5).await.unwrap();
    let trial = Trial::new("redlock (5 masters)", "2 of 5 masters killed");
    let running = trial.start_workers(&masters.url()).await;
    let started = Instant::now();
    masters.nodes[0].kill();
    masters.nodes[3].kill();
    trial
        .finish(running, started, Instant::now(), Promise::Safe)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_holder_paused_past_its_lease() {
    let masters = RedisMasters::start(5).await.unwrap();
    holder_paused("redlock (5 masters)", &masters.url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_holder_killed() {
    let masters = RedisMasters::start(5).await.unwrap();
    holder_killed("redlock (5 masters)", &masters.url()).await;
}

// ---------------------------------------------------------------------------------
// RELIABILITY.md

/// Renders RELIABILITY.md from the rows the tests wrote to `LOCKKIT_RELIABILITY_DIR`
/// (`ci/reliability` runs the tests first, then this).
#[test]
#[ignore = "run by ci/reliability after the suite has written its rows"]
fn render_reliability_md() {
    let dir = std::env::var("LOCKKIT_RELIABILITY_DIR").expect("LOCKKIT_RELIABILITY_DIR is set");
    let out = std::env::var("LOCKKIT_RELIABILITY_MD").expect("LOCKKIT_RELIABILITY_MD is set");
    let mut rows: Vec<serde_json::Value> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| serde_json::from_slice(&std::fs::read(e.unwrap().path()).unwrap()).unwrap())
        .collect();
    assert!(!rows.is_empty(), "no rows in {dir}");
    let rank = |backend: &str| {
        [
            "sqlite",
            "postgres",
            "mysql",
            "redis",
            "redlock",
            "etcd",
            "zookeeper",
            "consul",
        ]
        .iter()
        .position(|b| backend.starts_with(b))
        .unwrap_or(usize::MAX)
    };
    rows.sort_by_key(|r| {
        let backend = r["backend"].as_str().unwrap_or_default().to_owned();
        (
            rank(&backend),
            backend,
            r["fault"].as_str().unwrap_or_default().to_owned(),
        )
    });
    let mut md = String::from(HEADER);
    md.push_str(&format!(
        "Generated {} on {} by `ci/reliability`.\n\n",
        command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        command_output("uname", &["-srm"]),
    ));
    md.push_str(
        "| backend | fault | operations | grants | stale writes rejected | stale writes accepted \
         | mutual-exclusion violations | token regressions | late writes | time to recover |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut notes = Vec::new();
    for r in &rows {
        let v = &r["verdict"];
        let count = |k: &str| v[k].as_array().map_or(0, Vec::len);
        let mut backend = r["backend"].as_str().unwrap_or_default().to_owned();
        if backend == "consul" {
            backend.push_str(" (stand-in)");
        }
        if let Some(why) = r["documented"].as_str() {
            notes.push(why.to_owned());
            backend.push_str(&format!(" [{}]", notes.len()));
        }
        md.push_str(&format!(
            "| {backend} | {} | {} | {} | {} | {} | {} | {} | {} | {} ms |\n",
            r["fault"].as_str().unwrap_or_default(),
            v["operations"],
            v["grants"],
            v["stale_rejected"],
            v["stale_accepted"],
            count("overlaps"),
            count("token_regressions"),
            v["late_accepted"],
            r["recovery_ms"],
        ));
    }
    md.push('\n');
    for (i, why) in notes.iter().enumerate() {
        md.push_str(&format!("[{}] Documented weakness: {why}.\n\n", i + 1));
    }
    md.push_str(FOOTER);
    std::fs::write(&out, md).unwrap();
}

fn command_output(cmd: &str, args: &[&str]) -> String {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

const HEADER: &str = "# Reliability\n\n\
Every backend under every fault, judged from recorded histories. Do not edit: \
regenerate with `ci/reliability` (it installs the servers, runs `tests/reliability.rs` \
and writes this file).\n\n\
Each row is one test: three workers, each with its own connections, loop on one key \
through *acquire → fenced write → hold 5 ms → fenced write → release* (1 s watchdog \
TTL), while the fault is injected. Every operation is recorded with its monotonic \
invoke and complete times, every write with its place in the resource's order; \
`lockkit_conformance::history::check` then counts, from the history alone:\n\n\
- **stale writes**: a write from a grant older than one that has already written to \
the resource (a `FencedCell`). *Rejected* is fencing doing its job; *accepted* is a \
safety violation.\n\
- **mutual-exclusion violations**: pairs of grants whose known-held intervals \
(from the acquire's return to the release, the loss notice or the lease deadline) \
overlap.\n\
- **token regressions**: consecutive grants whose token did not increase.\n\
- **late writes**: writes accepted after a newer grant was given but before its \
first write reached the resource — fencing cannot see those (the resource does not \
know the newer token yet); the workers write without checking `is_lost()` first, so \
a holder that lost its lock during a fault still tries.\n\
- **time to recover**: from the end of the fault (the thaw, heal or restart; for a \
holder fault or a killed member, the fault itself) to the next grant.\n\n\
Faults: *holder paused past its lease* (an outside holder process is SIGSTOPped once \
it holds the lock; after a worker has been granted the lock and written, it is \
thawed and makes its write, which must be refused, and it must report the loss); \
*holder killed* (SIGKILL while holding); *server paused* (SIGSTOP for 2.5 s); \
*client-server partition* (every connection through the testkit's TCP proxy, \
black-holed for 2.5 s); *server killed and restarted* (SIGKILL, 1 s down); *leader \
killed* (etcd and ZooKeeper with 3 members); *2 of 5 masters killed* (Redlock); \
*restarted while a lock is held* (Redis without persistence: SIGKILL while a worker \
holds the lock, restarted at once; holds last 1.5 s in these rows). \
Every server is real and on 127.0.0.1, except Consul: those rows ran against the \
testkit's Consul stand-in, which follows Consul's documented HTTP semantics but is \
not Consul.\n\n";

const FOOTER: &str = "\n\
**Redis without persistence.** Restarted without `appendonly yes` + `appendfsync \
always`, Redis forgets the lock and its fencing counter: the next grant gets token 1 \
(the token regression in the *no persistence* row), and a client that held the lock \
at the restart still believes it does while another is granted it (until its next \
renewal fails), so the resource, which remembers the higher token, refuses the new \
holder and accepts the old one. Mitigations lockkit offers: run the lock's Redis with \
`appendonly yes` and `appendfsync always` (the *appendfsync always* row: the same \
restart, nothing lost), and/or connect with `?fence_seed=clock`, which starts a \
missing counter from the server's clock in microseconds, so tokens keep rising across \
the restart and fencing refuses the old holder (the *fence_seed=clock* row); the lock \
itself is still lost. See the README's Redis section.\n";
