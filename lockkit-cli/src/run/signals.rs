//! The signals that ask `lockkit run` to stop: TERM (systemd, `docker stop`,
//! Kubernetes), INT (Ctrl-C) and HUP (a closed terminal). Once these are caught,
//! lockkit no longer dies of them: it passes them on to the command, waits for it,
//! and only then releases the lock.

use std::io;

use rustix::process::Signal;
use tokio::signal::unix::{SignalKind, signal};

/// The stop signals, caught from the moment this is made.
#[derive(Debug)]
pub(crate) struct Stop {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Stop {
    /// Catches TERM, INT and HUP from now on.
    pub(crate) fn catch() -> io::Result<Self> {
        Ok(Self {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// The next stop signal to arrive.
    pub(crate) async fn next(&mut self) -> Signal {
        tokio::select! {
            _ = self.term.recv() => Signal::TERM,
            _ = self.int.recv() => Signal::INT,
            _ = self.hup.recv() => Signal::HUP,
        }
    }
}

/// `TERM`, `INT`, … for messages.
pub(crate) fn name(signal: Signal) -> &'static str {
    match signal {
        Signal::TERM => "TERM",
        Signal::INT => "INT",
        Signal::HUP => "HUP",
        Signal::KILL => "KILL",
        Signal::USR1 => "USR1",
        Signal::USR2 => "USR2",
        _ => "a signal",
    }
}
