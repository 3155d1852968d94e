//! Where a server's own directory goes: the machine's temp dir, or its tmpfs
//! for a data directory of many small files.

use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::TestkitError;

/// The tmpfs a data directory of many files goes on, when it is one.
const TMPFS: &str = "/dev/shm";

/// Room the tmpfs must have left for a server to go there: a PostgreSQL data
/// directory is about 40 MB, and its WAL grows by 16 MB segments.
const TMPFS_ROOM: u64 = 2 << 30;

/// `statfs`'s `f_type` of a tmpfs.
const TMPFS_MAGIC: u64 = 0x0102_1994;

/// A temp dir whose name marks it as ours (`ci/test` looks for leftovers by it).
pub(crate) fn temp_dir() -> Result<TempDir, TestkitError> {
    temp_dir_in(&std::env::temp_dir())
}

/// As [`temp_dir`], but on the machine's tmpfs (`/dev/shm`) when it is one with
/// [`TMPFS_ROOM`] left: for a server whose data directory is copied from a
/// template of many small files.
///
/// PostgreSQL's template holds about 1,000 files. On the root file system of
/// the CI machine kind a copy of it costs 0.8 s of kernel time (`cp -a`, mostly
/// in ext4's inode allocation), on the tmpfs 0.07 s. With 4 tests at a time on
/// 2 cores, the 49 lease-mode cases of `conformance_postgres` took 25 s with
/// their servers on disk and 11 s on the tmpfs.
pub(crate) fn many_files_dir() -> Result<TempDir, TestkitError> {
    match roomy_tmpfs() {
        Some(tmpfs) => temp_dir_in(&tmpfs),
        None => temp_dir(),
    }
}

fn temp_dir_in(base: &Path) -> Result<TempDir, TestkitError> {
    Ok(tempfile::Builder::new()
        .prefix("lockkit-testkit-")
        .tempdir_in(base)?)
}

/// [`TMPFS`], if it is a tmpfs with [`TMPFS_ROOM`] left.
fn roomy_tmpfs() -> Option<PathBuf> {
    let fs = rustix::fs::statfs(TMPFS).ok()?;
    // The fields' widths differ by target.
    #[allow(clippy::unnecessary_cast)]
    let (kind, left) = (
        fs.f_type as u64,
        (fs.f_bavail as u64).saturating_mul(fs.f_bsize as u64),
    );
    (kind == TMPFS_MAGIC && left >= TMPFS_ROOM).then(|| PathBuf::from(TMPFS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_many_files_dir_is_ours_by_name_and_on_the_tmpfs_when_it_has_room() {
        let dir = many_files_dir().unwrap();
        let name = dir.path().file_name().unwrap().to_string_lossy();
        assert!(name.starts_with("lockkit-testkit-"), "{name}");
        let on_tmpfs = dir.path().starts_with(TMPFS);
        assert_eq!(
            on_tmpfs,
            roomy_tmpfs().is_some(),
            "{}",
            dir.path().display()
        );
    }
}
