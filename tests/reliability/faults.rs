//! The faults, each run against one backend's URL: holder paused or killed (an
//! outside holder process), server paused, client-server partition, server killed
//! and restarted.

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

/// A holder process takes the lock (queuing with the workers) and is frozen with
/// SIGSTOP past its lease. Once a worker has been granted the lock and written,
/// the holder is thawed and makes the write it was about to make: the resource
/// must refuse it, and the holder must be told its lock is lost.
pub(crate) async fn holder_paused(backend: &'static str, url: &str) {
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
pub(crate) async fn holder_killed(backend: &'static str, url: &str) {
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
