//! Progress bars on stderr, hidden when the output is JSON, and the log writer
//! that prints above them instead of through them.

use std::io::{IsTerminal, Write};
use std::sync::{Mutex, OnceLock};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use lockkit_core::sync::lock;

/// Every bar of this process draws through one `MultiProgress`, so that a log line
/// can lift them out of the way ([`LogWriter`]).
fn multi() -> &'static MultiProgress {
    static MULTI: OnceLock<MultiProgress> = OnceLock::new();
    MULTI.get_or_init(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()))
}

/// Makes progress bars, or hidden ones.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bars {
    hidden: bool,
}

impl Bars {
    /// Bars that draw (on stderr), unless `hidden`.
    pub(crate) fn new(hidden: bool) -> Self {
        Self { hidden }
    }

    /// A bar of `len` steps labelled `label`.
    pub(crate) fn bar(&self, len: u64, label: impl Into<String>) -> ProgressBar {
        if self.hidden {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::new(len);
        bar.set_style(
            ProgressStyle::with_template("{prefix:>28} {bar:30} {pos}/{len} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_prefix(label.into());
        add(bar)
    }
}

/// Draws `bar` with the others (see [`LogWriter`]).
pub(crate) fn add(bar: ProgressBar) -> ProgressBar {
    multi().add(bar)
}

/// Where log lines go: stderr, with the progress bars lifted out of the way while
/// a line is written, so lines never tear through a bar.
#[derive(Debug, Default)]
pub(crate) struct LogWriter {
    line: Vec<u8>,
}

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.line.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.line.is_empty() {
            return Ok(());
        }
        let line = std::mem::take(&mut self.line);
        if let Some(held) = held().as_mut() {
            held.extend_from_slice(&line);
            return Ok(());
        }
        multi().suspend(|| std::io::stderr().lock().write_all(&line))
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Log lines held back while a quiet verb runs, or `None` when lines go out as
/// they come.
fn held() -> std::sync::MutexGuard<'static, Option<Vec<u8>>> {
    static HELD: Mutex<Option<Vec<u8>>> = Mutex::new(None);
    lock(&HELD)
}

/// Holds log lines back from now on: `demo` and `check` print their results,
/// and the warnings a passing run logs on the way (a slow statement, a loss the
/// suite caused on purpose) only if the run fails ([`show_held_logs`]).
pub(crate) fn hold_back_logs() {
    *held() = Some(Vec::new());
}

/// Stops holding lines back, and prints those held, under a heading, if `show`.
pub(crate) fn show_held_logs(show: bool) {
    let Some(lines) = held().take() else {
        return;
    };
    if show && !lines.is_empty() {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "logged during the run:");
        let _ = err.write_all(&lines);
    }
}

/// Whether log lines may carry colour: only on a terminal, never into a file or
/// a pipe.
pub(crate) fn log_colour() -> bool {
    std::io::stderr().is_terminal()
}
