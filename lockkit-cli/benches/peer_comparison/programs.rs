//! The participant programs of one backend group: lockkit and rslock (this binary,
//! re-run as a child), the Python peers and Curator.

use std::path::{Path, PathBuf};

use crate::Args;
use crate::program::Program;

/// Where the peer programs live, from this crate's manifest dir.
fn peers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../bench/peers")
}

/// The participant programs one backend group runs.
pub(crate) struct Programs<'a> {
    pub(crate) args: &'a Args,
}

impl Programs<'_> {
    /// lockkit or rslock, in this binary re-run as a child.
    pub(crate) fn rust(
        &self,
        library: &str,
        label: &str,
        target: String,
    ) -> Result<Program, String> {
        let exe = std::env::current_exe().map_err(|e| format!("no path to myself: {e}"))?;
        Ok(Program {
            library: label.to_owned(),
            argv: vec![
                exe.display().to_string(),
                "participant".into(),
                library.into(),
            ],
            target,
        })
    }

    pub(crate) fn python(
        &self,
        python: Option<&Path>,
        option: &str,
        peer: &str,
        label: &str,
        target: String,
    ) -> Result<Program, String> {
        let python = python
            .ok_or_else(|| format!("not run: no --{option} given (ci/bench-peers installs it)"))?;
        Ok(Program {
            library: label.to_owned(),
            argv: vec![
                python.display().to_string(),
                peers_dir().join("python_peers.py").display().to_string(),
                peer.into(),
            ],
            target,
        })
    }

    pub(crate) fn curator(&self, label: &str, target: String) -> Result<Program, String> {
        self.curator_recipe("mutex", label, target)
    }

    /// Curator's `recipe` (mutex, semaphore, read or write: see CuratorPeer.java).
    pub(crate) fn curator_recipe(
        &self,
        recipe: &str,
        label: &str,
        target: String,
    ) -> Result<Program, String> {
        let cp = self.args.curator_classpath.as_ref().ok_or_else(|| {
            "not run: no --curator-classpath given (ci/bench-peers builds it)".to_owned()
        })?;
        Ok(Program {
            library: label.to_owned(),
            argv: [
                "java",
                "-Xmx256m",
                "-XX:+UseSerialGC",
                &format!("-Dlockkit.recipe={recipe}"),
                "-cp",
                cp,
                "CuratorPeer",
            ]
            .map(str::to_owned)
            .to_vec(),
            target,
        })
    }
}
