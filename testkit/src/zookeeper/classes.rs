//! The class-data archive ZooKeeper's JVMs start from.
//!
//! A ZooKeeper JVM spends most of its start loading and verifying classes: about
//! 0.9 s of CPU here, and the suite starts hundreds of them, four tests at a time
//! on two cores. A dynamic class-data archive (`-XX:SharedArchiveFile`, JDK 13+)
//! holds ZooKeeper's, Netty's and the JDK's classes as they were loaded, and cuts
//! that to about 0.6 s.
//!
//! The archive is recorded once per machine: an ensemble member started with
//! `-XX:ArchiveClassesAtExit` serves, then is stopped with SIGTERM so that the JVM
//! writes it. It is kept as a [`template`](crate::template), whose fingerprint
//! covers the JVM and every jar on the classpath, so a different JVM or an
//! upgraded jar records its own. Only one process records at a time (a `flock` on
//! a file beside it); the others start without an archive meanwhile. A recording
//! that fails (the ensemble does not serve, the member does not exit in time) is
//! tried again by a later start; a JVM that exits cleanly without writing an
//! archive (it cannot make one) leaves an empty template, and every later start
//! goes without.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::fs::{FlockOperation, flock};

use super::{Jvm, ZooKeeperEnsemble, classpath};
use crate::TestkitError;
use crate::template::Template;

/// The archive's file in its template directory.
const ARCHIVE: &str = "zookeeper.jsa";

/// How long the recording member may take to write the archive and exit.
const WRITE_PATIENCE: Duration = Duration::from_secs(30);

/// The JVM flag a new ZooKeeper process starts with: the machine's archive, once
/// one is recorded (recording it first if none is, and no one else is).
pub(super) async fn archive_flag(jvm: &Jvm) -> Option<String> {
    let cp = classpath(&jvm.jar);
    let mut inputs = vec![jvm.java.as_path()];
    inputs.extend(cp.split(':').map(Path::new));
    let name = Template::named("zookeeper-classes", &inputs, &[&cp]);
    let dir = match name.found() {
        Some(dir) => dir,
        None => record(jvm, &name).await?,
    };
    let archive = dir.join(ARCHIVE);
    archive
        .is_file()
        .then(|| format!("-XX:SharedArchiveFile={}", archive.display()))
}

/// Records the archive, unless another process is recording it now.
async fn record(jvm: &Jvm, name: &Template) -> Option<PathBuf> {
    let lock = File::create(name.beside("lock")).ok()?;
    flock(&lock, FlockOperation::NonBlockingLockExclusive).ok()?;
    // Recorded by the process that held the lock before us.
    if let Some(dir) = name.found() {
        return Some(dir);
    }
    let staging = name.staging().ok()?;
    if let Err(e) = record_into(jvm, &staging.path().join(ARCHIVE)).await {
        // Not published: the next start tries again.
        eprintln!("lockkit-testkit: could not record ZooKeeper's class archive: {e}");
        return None;
    }
    staging.publish().ok()
}

/// Starts a 3-node ensemble whose first member writes its classes to `archive`
/// when it exits, waits until it serves, and stops that member gracefully.
async fn record_into(jvm: &Jvm, archive: &Path) -> Result<(), TestkitError> {
    let flag = format!("-XX:ArchiveClassesAtExit={}", archive.display());
    let mut ensemble =
        ZooKeeperEnsemble::start_members(jvm, 3, |i| (i == 0).then(|| flag.clone())).await?;
    if !ensemble.members[0].server.terminate(WRITE_PATIENCE).await {
        // Killed while it wrote: no half-written archive, and no template.
        let _ = std::fs::remove_file(archive);
        return Err(TestkitError::Setup {
            step: "recording ZooKeeper's class archive".into(),
            detail: format!("the JVM did not exit within {WRITE_PATIENCE:?} of SIGTERM"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::super::ZooKeeper;
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_server_starts_from_the_recorded_archive() {
        let jvm = Jvm::find().unwrap();
        // Recorded by this call, or by another test process (then it is ready
        // once that one publishes it).
        let until = Instant::now() + Duration::from_secs(60);
        let flag = loop {
            if let Some(flag) = archive_flag(&jvm).await {
                break flag;
            }
            assert!(Instant::now() < until, "no class archive was recorded");
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let archive = flag.trim_start_matches("-XX:SharedArchiveFile=");
        let zk = ZooKeeper::start().await.unwrap();
        let pid = zk.pid().unwrap();
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
        assert!(String::from_utf8_lossy(&cmdline).contains(&flag));
        // The JVM mapped it: it accepted the archive, not just the flag.
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
        assert!(maps.contains(archive), "{archive} is not mapped");
    }
}
