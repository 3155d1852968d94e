//! A lost hold is reported with its true cause, as the holder process (the
//! `lockkit __hold` child of `lockkit check`) prints it.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::process::Command;
use std::time::Duration;

use lockkit_conformance::holder::{HolderProcess, LOST};

fn holder_command() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockkit"));
    cmd.arg("__hold");
    cmd
}

/// A holder paused past its ZooKeeper session: the server deletes its node when
/// the session expires, and may tell the paused client of the deletion before it
/// closes the connection. The cause given is the session's end, not a deletion
/// by hand.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zookeeper_holder_paused_past_its_session_is_told_the_session_expired() {
    let zk = lockkit_testkit::ZooKeeper::start().await.unwrap();
    let url = format!("{}?session_timeout_ms=1000", zk.url());
    // A lease far longer than the session: only the session can end the hold.
    let (mut holder, _) =
        HolderProcess::start(holder_command(), &url, "paused", Duration::from_secs(60))
            .await
            .unwrap();
    holder.stop().unwrap();
    // Wait until the server has expired the session: another client gets the lock.
    let other = lockkit::connect(&url).await.unwrap();
    let g = other
        .lock("paused")
        .wait(Duration::from_secs(20))
        .await
        .unwrap();
    holder.resume().unwrap();
    let told = tokio::time::timeout(Duration::from_secs(10), holder.line(LOST))
        .await
        .unwrap()
        .unwrap();
    // Told by whichever comes first: the dropped connection, or the expiry.
    let session_ended =
        told.contains("session expired") || told.contains("connection to ZooKeeper dropped");
    assert!(
        session_ended && !told.contains("force_release") && !told.contains("by hand"),
        "the thawed holder was told: {told}"
    );
    g.release().await.unwrap();
    holder.kill().await;
}
