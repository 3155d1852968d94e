//! The result of a programmatic run.

use serde::Serialize;

/// How one case ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", content = "reason", rename_all = "lowercase")]
pub enum Outcome {
    /// The behaviour was as promised.
    Passed,
    /// It was not; the text says how.
    Failed(String),
    /// The case does not apply to this driver; the text says why.
    Skipped(String),
}

/// One case in a [`Report`].
#[derive(Debug, Clone, Serialize)]
pub struct CaseReport {
    /// The case's name (its test function name).
    pub name: &'static str,
    /// How it ended.
    pub outcome: Outcome,
    /// How long it took, in milliseconds.
    pub duration_ms: u64,
}

/// The result of [`crate::run`].
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The driver's name.
    pub driver: String,
    /// One entry per case, in suite order.
    pub cases: Vec<CaseReport>,
}

impl Report {
    /// Counts of passed, failed and skipped cases.
    pub fn counts(&self) -> (usize, usize, usize) {
        let mut c = (0, 0, 0);
        for case in &self.cases {
            match case.outcome {
                Outcome::Passed => c.0 += 1,
                Outcome::Failed(_) => c.1 += 1,
                Outcome::Skipped(_) => c.2 += 1,
            }
        }
        c
    }

    /// Whether nothing failed.
    pub fn ok(&self) -> bool {
        self.counts().1 == 0
    }
}
