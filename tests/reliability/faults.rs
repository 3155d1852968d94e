//! The faults, each run against one backend's URL: holder paused or killed (an
//! outside holder process), server paused, client-server partition, server killed
//! and restarted (also while a lock is held), a cluster's leader killed; and the
//! macros that make them tests.

use super::*;

// ---------------------------------------------------------------------------------
// Holder faults: an outside holder process, stopped or killed while it holds.

/// The command that re-runs this test binary as a holder child.
pub(crate) fn holder_command() -> std::process::Command {
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

/// An outside holder process for `trial`: it takes the lock, or one permit of the
/// trial's semaphore, or the write lock of its read-write lock, queuing with the
/// workers. Returns the process, its token and its mode.
async fn start_holder(trial: &Trial, url: &str) -> (HolderProcess, u64, LockMode) {
    let started = match trial.primitive {
        Primitive::Semaphore { limit } => {
            let (cmd, key) = (holder_command(), &trial.key);
            let permit = if trial.holder_fixed {
                HolderProcess::start_permit_fixed(cmd, url, key, TTL, limit).await
            } else {
                HolderProcess::start_permit(cmd, url, key, TTL, limit).await
            };
            permit.map(|(h, t)| (h, t, LockMode::Permit { limit }))
        }
        _ if trial.holder_fixed => {
            HolderProcess::start_fixed(holder_command(), url, &trial.key, TTL)
                .await
                .map(|(h, t)| (h, t, LockMode::Exclusive))
        }
        _ => HolderProcess::start(holder_command(), url, &trial.key, TTL)
            .await
            .map(|(h, t)| (h, t, LockMode::Exclusive)),
    };
    started.unwrap_or_else(|e| panic!("{}: {e}", trial.backend))
}

/// A holder process takes the lock (queuing with the workers) and is frozen with
/// SIGSTOP past its lease. Once a worker has been granted and written after the
/// holder's lease ended, the holder is thawed and makes the write it was about to
/// make: the resource must refuse it, and the holder must be told its hold is lost.
pub(crate) async fn holder_paused(backend: &'static str, url: &str) {
    holder_paused_on(Trial::new(backend, "holder paused past its lease"), url).await;
}

/// [`holder_paused`] on the trial's primitive.
pub(crate) async fn holder_paused_on(trial: Trial, url: &str) {
    let backend = trial.backend;
    let running = trial.start_workers(url).await;
    let invoked = Instant::now();
    let (mut holder, token, mode) = start_holder(&trial, url).await;
    let granted = Instant::now();
    holder.stop().unwrap();
    let stopped = Instant::now();
    let grant = trial
        .recorder
        .grant_of(trial.workers, mode, token, invoked, granted);
    trial.recorder.held_until(grant, stopped);
    // With free permits, workers write while the holder's permit is still live.
    let lease_ended = stopped + holder.effective_ttl();
    trial
        .wait_until("worker grant and write after the holder's lease", |h| {
            h.written_after(lease_ended)
        })
        .await;
    holder.resume().unwrap();
    let accepted = trial.resource.write(grant, token);
    assert!(
        !accepted,
        "{backend}: the thawed holder's stale write (token {token}) was accepted"
    );
    let told = timeout(Duration::from_secs(10), holder.line(holder::LOST)).await;
    let Ok(Some(told)) = told else {
        panic!("{backend}: the thawed holder was not told its hold was lost within 10 s")
    };
    // No one deleted or broke the lock: the cause given must be the pause's.
    assert!(
        !told.contains("force_release") && !told.contains("by hand"),
        "{backend}: the thawed holder was told a wrong cause: {told}"
    );
    holder.kill().await;
    trial.finish(running, stopped, stopped, Promise::Safe).await;
}

/// A holder process takes the lock and is killed with SIGKILL: the lock is granted
/// again (after the lease, or at once where the backend sees the session end).
pub(crate) async fn holder_killed(backend: &'static str, url: &str) {
    holder_killed_on(Trial::new(backend, "holder killed"), url).await;
}

/// [`holder_killed`] on the trial's primitive.
pub(crate) async fn holder_killed_on(trial: Trial, url: &str) {
    let running = trial.start_workers(url).await;
    let invoked = Instant::now();
    let (holder, token, mode) = start_holder(&trial, url).await;
    let granted = Instant::now();
    // Its hold ends as the kill is sent, as a worker's does as it starts its
    // release: a backend that sees the session end may grant the next worker
    // before the reaped child is reported.
    let killed = Instant::now();
    holder.kill().await;
    let grant = trial
        .recorder
        .grant_of(trial.workers, mode, token, invoked, granted);
    trial.recorder.held_until(grant, killed);
    trial.finish(running, killed, killed, Promise::Safe).await;
}

// ---------------------------------------------------------------------------------
// Server faults.

/// The server is frozen (SIGSTOP) for [`OUTAGE`], then thawed.
pub(crate) async fn server_paused(
    backend: &'static str,
    url: &str,
    pause: impl Fn(),
    resume: impl Fn(),
) {
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
pub(crate) async fn partitioned(backend: &'static str, server_port: u16, url: &str) {
    partitioned_on(
        Trial::new(backend, "client-server partition"),
        server_port,
        url,
    )
    .await;
}

/// [`partitioned`] on the trial's primitive.
pub(crate) async fn partitioned_on(trial: Trial, server_port: u16, url: &str) {
    let proxy = FaultProxy::start(server_port).await.unwrap();
    let url = url.replace(
        &format!("127.0.0.1:{server_port}"),
        &format!("127.0.0.1:{}", proxy.port()),
    );
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

/// How long workers hold the lock in the Redis restart-during-a-hold tests: longer
/// than the restart, so the holder writes again after it.
pub(crate) const HOLD_ACROSS_RESTART: Duration = Duration::from_millis(1500);

/// Starts `trial`'s workers on `url`, each holding the lock for
/// [`HOLD_ACROSS_RESTART`], and returns once one of them holds it: the moment for a
/// fault during a hold.
pub(crate) async fn workers_holding(trial: &mut Trial, url: &str) -> Running {
    trial.hold = HOLD_ACROSS_RESTART;
    let running = trial.start_workers(url).await;
    trial
        .wait_until("a worker holding the lock", |h| {
            h.grants.iter().any(|g| g.held_until.is_none())
        })
        .await;
    running
}

/// Redis (no persistence) is killed while a worker holds the lock (holds last
/// [`HOLD_ACROSS_RESTART`] here) and restarted at once, without its data.
pub(crate) async fn redis_restarted_during_a_hold(
    backend: &'static str,
    url: &str,
    server: &mut Redis,
    promise: Promise,
) -> Verdict {
    let mut trial = Trial::new(backend, "restarted while a lock is held");
    let running = workers_holding(&mut trial, url).await;
    let started = Instant::now();
    server.kill();
    server.restart().await.unwrap();
    trial
        .finish(running, started, Instant::now(), promise)
        .await
}

/// The workers take `$primitive` (a lock, a semaphore's permits, a read-write
/// lock) on `$url`; `$server` is killed, stays down for [`DOWNTIME`], and is
/// restarted (`restart()` awaits the server).
macro_rules! server_restarted {
    ($backend:expr, $primitive:expr, $url:expr, $server:ident, $promise:expr) => {{
        let trial = Trial::new($backend, "server killed and restarted").on($primitive);
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

/// The holder faults on a semaphore or a read-write lock (the outside holder takes
/// a permit, or the write lock), as tests named `<module>::holder_<fault>`, in rows
/// named `$backend`; `$paused` (e.g. `fixed_holder_lease`) shapes the paused
/// holder's trial.
macro_rules! holder_faults_on {
    ($module:ident, $primitive:expr, $backend:literal, $start:expr, $url:expr $(, $paused:ident)?) => {
        mod $module {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn holder_paused_past_its_lease() {
                let server = $start.await.unwrap();
                let trial = Trial::new($backend, "holder paused past its lease");
                holder_paused_on(trial.on($primitive)$(.$paused())?, &$url(&server)).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn holder_killed() {
                let server = $start.await.unwrap();
                let trial = Trial::new($backend, "holder killed");
                holder_killed_on(trial.on($primitive), &$url(&server)).await;
            }
        }
    };
}

/// The workers of `$trial` run on `$url` of `$cluster` (its `members`, its
/// `leader()`); the leader is killed.
macro_rules! leader_killed {
    ($trial:expr, $url:expr, $cluster:ident) => {{
        let trial = $trial;
        let running = trial.start_workers(&$url).await;
        let leader = $cluster.leader().await.expect("the cluster has a leader");
        let started = Instant::now();
        $cluster.members[leader].kill();
        trial
            .finish(running, started, Instant::now(), Promise::Safe)
            .await
    }};
}

/// The four faults every single-server backend takes, as tests named
/// `<backend>::<fault>`.
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
