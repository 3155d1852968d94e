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

use lockkit::{LockMode, Locker};
use lockkit_conformance::history::{
    self, FencedResource, History, Primitive, Recorder, Running, Verdict, Workload,
};
use lockkit_conformance::holder::{self, HolderProcess};
use lockkit_testkit::{
    ConsulStandIn, Etcd, EtcdCluster, Fault, FaultProxy, MariaDb, Postgres, Redis, RedisCluster,
    RedisMasters, RedisSentinels, StandInOptions, ZooKeeper, ZooKeeperEnsemble,
};
use tokio::time::{Instant, sleep, timeout};

#[macro_use]
mod faults;
mod report;
mod trial;

mod elections;
mod eviction;
mod failover;
mod redis_data;
mod wake_ups;

use failover::failover_during_a_hold;
use faults::*;
use trial::*;

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

/// Entry point of the holder child; does nothing unless started by a holder fault.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child-process entry point for the holder faults"]
async fn holder_process_entry() {
    holder::child_main(|url: String| async move { lockkit::driver::connect(&url).await }).await;
}

// ---------------------------------------------------------------------------------
// The backends.

fn sqlite_url(dir: &tempfile::TempDir) -> String {
    format!("sqlite://{}", dir.path().join("locks.db").display())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_holder_paused_past_its_lease() {
    let dir = tempfile::tempdir().unwrap();
    // A fixed lease: a watchdog holder frozen in the middle of a renewal keeps
    // SQLite's write lock until it is thawed, and every writer of the file stalls
    // behind it (the README says so). That stall is not this fault.
    let trial = Trial::new("sqlite", "holder paused past its lease").fixed_holder_lease();
    holder_paused_on(trial, &sqlite_url(&dir)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_holder_killed() {
    let dir = tempfile::tempdir().unwrap();
    holder_killed("sqlite", &sqlite_url(&dir)).await;
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

/// A semaphore of 3 permits, for 5 workers and the outside holder.
const SEMAPHORE: Primitive = Primitive::Semaphore { limit: 3 };

holder_faults_on!(
    redis_semaphore,
    SEMAPHORE,
    "redis (semaphore of 3)",
    Redis::start(),
    |s: &Redis| s.url()
);
// SQLite's paused holders hold a fixed lease, as its lock's does (see
// `sqlite_holder_paused_past_its_lease`).
holder_faults_on!(
    sqlite_semaphore,
    SEMAPHORE,
    "sqlite (semaphore of 3)",
    async { tempfile::tempdir() },
    sqlite_url,
    fixed_holder_lease
);
holder_faults_on!(
    etcd_semaphore,
    SEMAPHORE,
    "etcd (semaphore of 3)",
    Etcd::start(),
    |s: &Etcd| s.url()
);
holder_faults_on!(
    zookeeper_semaphore,
    SEMAPHORE,
    "zookeeper (semaphore of 3)",
    ZooKeeper::start(),
    |s: &ZooKeeper| format!("{}?session_timeout_ms=1000", s.url())
);

// PostgreSQL and MariaDB in lease mode (the testkit's URLs name no `mode`, and lease
// is the default): permits are rows with leases, so a holder's permit outlives its
// process until the lease ends, and a restarted server still has every row and the
// key's fencing counter.
holder_faults_on!(
    postgres_semaphore,
    SEMAPHORE,
    "postgres (semaphore of 3)",
    Postgres::start(),
    |s: &Postgres| s.url()
);
holder_faults_on!(
    mysql_semaphore,
    SEMAPHORE,
    "mysql (semaphore of 3)",
    MariaDb::start(),
    |s: &MariaDb| s.url()
);

/// Killed and restarted under five workers taking permits, PostgreSQL keeps the
/// permits' rows and the fencing counter: no more than 3 holders, tokens rising.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_semaphore_server_killed_and_restarted_stays_safe() {
    let mut server = Postgres::start().await.unwrap();
    server_restarted!(
        "postgres (semaphore of 3)",
        SEMAPHORE,
        server.url(),
        server,
        Promise::Safe
    );
}

/// As [`postgres_semaphore_server_killed_and_restarted_stays_safe`], on MariaDB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_semaphore_server_killed_and_restarted_stays_safe() {
    let mut server = MariaDb::start().await.unwrap();
    server_restarted!(
        "mysql (semaphore of 3)",
        SEMAPHORE,
        server.url(),
        server,
        Promise::Safe
    );
}

holder_faults_on!(
    redis_read_write,
    Primitive::ReadWrite,
    "redis (read-write)",
    Redis::start(),
    |s: &Redis| s.url()
);
holder_faults_on!(
    etcd_read_write,
    Primitive::ReadWrite,
    "etcd (read-write)",
    Etcd::start(),
    |s: &Etcd| s.url()
);
holder_faults_on!(
    zookeeper_read_write,
    Primitive::ReadWrite,
    "zookeeper (read-write)",
    ZooKeeper::start(),
    |s: &ZooKeeper| format!("{}?session_timeout_ms=1000", s.url())
);
holder_faults_on!(
    sqlite_read_write,
    Primitive::ReadWrite,
    "sqlite (read-write)",
    async { tempfile::tempdir() },
    sqlite_url,
    fixed_holder_lease
);

holder_faults_on!(
    redis_several_keys,
    Primitive::SeveralKeys,
    "redis (several keys)",
    Redis::start(),
    |s: &Redis| s.url()
);
holder_faults_on!(
    etcd_several_keys,
    Primitive::SeveralKeys,
    "etcd (several keys)",
    Etcd::start(),
    |s: &Etcd| s.url()
);
holder_faults_on!(
    zookeeper_several_keys,
    Primitive::SeveralKeys,
    "zookeeper (several keys)",
    ZooKeeper::start(),
    |s: &ZooKeeper| format!("{}?session_timeout_ms=1000", s.url())
);
holder_faults_on!(
    sqlite_several_keys,
    Primitive::SeveralKeys,
    "sqlite (several keys)",
    async { tempfile::tempdir() },
    sqlite_url,
    fixed_holder_lease
);
holder_faults_on!(
    postgres_several_keys,
    Primitive::SeveralKeys,
    "postgres (several keys)",
    Postgres::start(),
    |s: &Postgres| s.url()
);
holder_faults_on!(
    mysql_several_keys,
    Primitive::SeveralKeys,
    "mysql (several keys)",
    MariaDb::start(),
    |s: &MariaDb| s.url()
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_server_killed_and_restarted() {
    let mut server = Postgres::start().await.unwrap();
    server_restarted!(
        "postgres",
        Primitive::Lock,
        server.url(),
        server,
        Promise::Safe
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_server_killed_and_restarted() {
    let mut server = MariaDb::start().await.unwrap();
    server_restarted!(
        "mysql",
        Primitive::Lock,
        server.url(),
        server,
        Promise::Safe
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_server_killed_and_restarted() {
    let mut server = Etcd::start().await.unwrap();
    server_restarted!("etcd", Primitive::Lock, server.url(), server, Promise::Safe);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_server_killed_and_restarted() {
    let mut server = ZooKeeper::start().await.unwrap();
    let url = format!("{}?session_timeout_ms=1000", server.url());
    server_restarted!("zookeeper", Primitive::Lock, url, server, Promise::Safe);
}

// ---------------------------------------------------------------------------------
// Cluster members.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_cluster_leader_killed() {
    let mut cluster = EtcdCluster::start(3).await.unwrap();
    let trial = Trial::new("etcd (3 members)", "leader killed");
    leader_killed!(trial, cluster.url(), cluster);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_cluster_leader_killed_under_a_semaphore() {
    let mut cluster = EtcdCluster::start(3).await.unwrap();
    let trial = Trial::new("etcd (3 members, semaphore of 3)", "leader killed").on(SEMAPHORE);
    leader_killed!(trial, cluster.url(), cluster);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_ensemble_leader_killed() {
    let mut ensemble = ZooKeeperEnsemble::start(3).await.unwrap();
    let trial = Trial::new("zookeeper (3 members)", "leader killed");
    let url = format!("{}?session_timeout_ms=2000", ensemble.url());
    leader_killed!(trial, url, ensemble);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_ensemble_leader_killed_under_a_semaphore() {
    let mut ensemble = ZooKeeperEnsemble::start(3).await.unwrap();
    let trial = Trial::new("zookeeper (3 members, semaphore of 3)", "leader killed").on(SEMAPHORE);
    let url = format!("{}?session_timeout_ms=2000", ensemble.url());
    leader_killed!(trial, url, ensemble);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_semaphore_client_server_partition() {
    let server = Etcd::start().await.unwrap();
    let trial = Trial::new("etcd (semaphore of 3)", "client-server partition").on(SEMAPHORE);
    partitioned_on(trial, server.port(), &server.url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_semaphore_client_server_partition() {
    let server = ZooKeeper::start().await.unwrap();
    let trial = Trial::new("zookeeper (semaphore of 3)", "client-server partition").on(SEMAPHORE);
    let url = format!("{}?session_timeout_ms=1000", server.url());
    partitioned_on(trial, server.port(), &url).await;
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
    report::render();
}
