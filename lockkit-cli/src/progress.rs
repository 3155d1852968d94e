//! Progress bars on stderr, hidden when the output is JSON.

use indicatif::{ProgressBar, ProgressStyle};

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
        bar
    }
}
