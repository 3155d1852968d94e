//! Why a server could not be started or controlled.

use std::path::PathBuf;

/// A testkit failure, with what a person needs to fix it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TestkitError {
    /// The server binary is not installed.
    #[error("{binary} not found — run ci/setup")]
    NotFound {
        /// The binary looked for.
        binary: String,
    },
    /// The server did not become ready in time.
    #[error(
        "{binary} on 127.0.0.1:{port} did not become ready within {waited_secs} s; last lines of {log}:\n{tail}"
    )]
    NotReady {
        /// The server binary.
        binary: String,
        /// Its port.
        port: u16,
        /// How long we waited.
        waited_secs: u64,
        /// Its log file.
        log: PathBuf,
        /// The end of the log.
        tail: String,
    },
    /// A setup step (initdb, install-db, …) failed.
    #[error("{step} failed: {detail}")]
    Setup {
        /// The step.
        step: String,
        /// Its output.
        detail: String,
    },
    /// A foreign lock client (etcdctl, psql, a Python or Java holder) did not do
    /// what a test expected of it.
    #[error("{client}: {detail}")]
    Foreign {
        /// The client.
        client: String,
        /// What went wrong, with its stderr.
        detail: String,
    },
    /// An I/O error.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}
