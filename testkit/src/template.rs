//! Initialized data directories, made once per machine and copied for each server.
//!
//! `initdb` and `mariadb-install-db` cost a server start most of its CPU time, and
//! the suite starts hundreds of servers, four at a time on two cores. Each
//! directory is made once, under the machine's temp dir as
//! `lockkit-template-<what>-<fingerprint>`, and every later server starts on a
//! copy (`cp -a`: ownership and modes kept, holes kept sparse). The fingerprint
//! covers the binaries that made it and the arguments they were given, so an
//! upgraded server or a changed setup makes a directory of its own.
//!
//! Processes that find no template at once each make one in a private staging
//! directory and rename it into place: the first rename wins, the others remove
//! theirs. A reader therefore sees a whole template or none.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::TestkitError;
use crate::process::run_setup;

/// The template named `what` for these inputs, made by `make` (given an empty
/// staging directory to fill) if this machine has none yet.
///
/// `inputs` are the binaries whose size and modification time the fingerprint
/// covers; `args` is everything else that shapes the result.
pub(crate) fn template(
    what: &str,
    inputs: &[&Path],
    args: &[&str],
    make: impl FnOnce(&Path) -> Result<(), TestkitError>,
) -> Result<PathBuf, TestkitError> {
    let name = Template::named(what, inputs, args);
    if let Some(dir) = name.found() {
        return Ok(dir);
    }
    let staging = name.staging()?;
    make(staging.path())?;
    staging.publish()
}

/// Where a template lives, found or not yet made.
pub(crate) struct Template {
    dir: PathBuf,
}

impl Template {
    /// The template named `what` for these inputs (see [`template`]).
    pub(crate) fn named(what: &str, inputs: &[&Path], args: &[&str]) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "lockkit-template-{what}-{:016x}",
            fingerprint(inputs, args)
        ));
        Self { dir }
    }

    /// The template's directory, if this machine has made it.
    pub(crate) fn found(&self) -> Option<PathBuf> {
        self.dir.is_dir().then(|| self.dir.clone())
    }

    /// A path beside the template's: its name and `.suffix`.
    pub(crate) fn beside(&self, suffix: &str) -> PathBuf {
        self.dir.with_extension(suffix)
    }

    /// An empty directory of this process's own, beside where the template goes.
    pub(crate) fn staging(&self) -> Result<Staging, TestkitError> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let path = self.beside(&format!("staging-{}-{nanos}", std::process::id()));
        std::fs::create_dir(&path)?;
        Ok(Staging {
            path,
            dir: self.dir.clone(),
        })
    }
}

/// A template being made: removed on drop unless published.
pub(crate) struct Staging {
    path: PathBuf,
    dir: PathBuf,
}

impl Staging {
    /// The directory to fill.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the staging directory into the template's place. If another
    /// process got there first, theirs is kept (a rename never replaces a
    /// directory that has files; an empty one, a template of nothing, is replaced
    /// by the same) and this one is removed.
    pub(crate) fn publish(self) -> Result<PathBuf, TestkitError> {
        match std::fs::rename(&self.path, &self.dir) {
            Ok(()) => Ok(self.dir.clone()),
            Err(_) if self.dir.is_dir() => Ok(self.dir.clone()),
            Err(e) => Err(e.into()),
        }
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // Gone already once published.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Copies `from` to `to` (which must not exist), keeping ownership, modes and holes.
pub(crate) fn copy(from: &Path, to: &Path) -> Result<(), TestkitError> {
    run_setup(
        "cp -a (a data directory template)",
        Command::new("cp")
            .arg("-a")
            .arg("--sparse=always")
            .arg(from)
            .arg(to),
    )
}

/// Bumped when what a template holds, or how it is laid out, changes.
const LAYOUT: u32 = 1;

/// A hash of `inputs` (each path, its size and modification time), `args` and
/// [`LAYOUT`].
fn fingerprint(inputs: &[&Path], args: &[&str]) -> u64 {
    let mut h = DefaultHasher::new();
    for input in inputs {
        input.hash(&mut h);
        if let Ok(meta) = std::fs::metadata(input) {
            meta.len().hash(&mut h);
            meta.modified().ok().hash(&mut h);
        }
    }
    args.hash(&mut h);
    LAYOUT.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_is_made_once_and_then_found() {
        let what = format!("unit-{}", std::process::id());
        let mut made = 0;
        let first = template(&what, &[], &["a"], |dir| {
            made += 1;
            Ok(std::fs::write(dir.join("f"), "x")?)
        })
        .unwrap();
        let again = template(&what, &[], &["a"], |_| panic!("made twice")).unwrap();
        assert_eq!(first, again);
        assert_eq!(made, 1);
        assert_eq!(std::fs::read_to_string(first.join("f")).unwrap(), "x");
        std::fs::remove_dir_all(first).unwrap();
    }

    #[test]
    fn a_failed_make_leaves_nothing_behind() {
        let what = format!("unit-fail-{}", std::process::id());
        let failed = template(&what, &[], &["a"], |dir| {
            std::fs::write(dir.join("half"), "x")?;
            Err(TestkitError::Setup {
                step: "make".into(),
                detail: String::new(),
            })
        });
        assert!(failed.is_err());
        let prefix = format!("lockkit-template-{what}-");
        let left = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .count();
        assert_eq!(left, 0);
    }

    #[test]
    fn different_arguments_make_different_templates() {
        assert_ne!(fingerprint(&[], &["a"]), fingerprint(&[], &["b"]));
    }
}
