//! Running cases: programmatically ([`run`]), or one by one as tests ([`crate::Suites`]).

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cases::{CASES, Case};
use crate::check::CaseError;
use crate::harness::{Ctx, Harness};
use crate::report::{CaseReport, Outcome, Report};

/// Builds the command that starts a holder child process (the runner adds the
/// `LOCKKIT_HOLDER_*` environment); see [`crate::holder`].
pub type HolderCommand = Arc<dyn Fn() -> Command + Send + Sync>;

/// A progress callback for [`run`].
pub type ProgressFn = Arc<dyn Fn(Progress<'_>) + Send + Sync>;

/// The longest a single case may run before it counts as failed.
pub const CASE_TIMEOUT: Duration = Duration::from_secs(90);

/// The longest the clean-up after a case may take.
const PURGE_TIMEOUT: Duration = Duration::from_secs(10);

/// Options for [`run`].
#[derive(Default)]
#[non_exhaustive]
pub struct RunOptions {
    /// How to start a holder process; without it the killed-holder case is skipped.
    pub holder: Option<HolderCommand>,
    /// Run only cases whose name contains this text (or one of these,
    /// comma-separated: see [`matches_filter`]).
    pub filter: Option<String>,
    /// Called before each case with its index and name, and after it with its report.
    pub progress: Option<ProgressFn>,
}

impl RunOptions {
    /// Options with no holder command, no filter and no progress callback.
    pub fn new() -> Self {
        Self::default()
    }

    /// How to start a holder child process.
    pub fn holder(mut self, holder: HolderCommand) -> Self {
        self.holder = Some(holder);
        self
    }

    /// Runs only cases whose name contains `filter`, or one of its
    /// comma-separated parts ([`matches_filter`]).
    pub fn filter(mut self, filter: Option<String>) -> Self {
        self.filter = filter;
        self
    }

    /// Reports progress to `f`.
    pub fn progress(mut self, f: impl Fn(Progress<'_>) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(f));
        self
    }
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("filter", &self.filter)
            .finish_non_exhaustive()
    }
}

/// A progress event from [`run`].
#[derive(Debug)]
#[non_exhaustive]
pub enum Progress<'a> {
    /// A case is starting (index, total, name).
    Started(usize, usize, &'static str),
    /// A case has finished.
    Finished(&'a CaseReport),
}

/// Whether the case `name` is run under `filter`: no filter, or one of its
/// comma-separated parts in the name.
///
/// ```
/// use lockkit_conformance::matches_filter;
/// assert!(matches_filter("fifo_order", None));
/// assert!(matches_filter("fifo_order", Some("fencing,fifo")));
/// assert!(!matches_filter("readers_share", Some("fencing,fifo")));
/// ```
pub fn matches_filter(name: &str, filter: Option<&str>) -> bool {
    filter.is_none_or(|f| {
        f.split(',')
            .any(|part| !part.is_empty() && name.contains(part))
    })
}

/// Runs every case against `harness` and reports each one.
pub async fn run(harness: Arc<dyn Harness>, options: RunOptions) -> Report {
    let cases: Vec<&Case> = CASES
        .iter()
        .filter(|c| matches_filter(c.name, options.filter.as_deref()))
        .collect();
    let driver = match harness.driver().await {
        Ok(d) => d.name().to_string(),
        Err(e) => format!("unreachable ({e})"),
    };
    let mut reports = Vec::with_capacity(cases.len());
    for (i, case) in cases.iter().enumerate() {
        if let Some(p) = &options.progress {
            p(Progress::Started(i, cases.len(), case.name));
        }
        let report = run_one(case, harness.clone(), options.holder.clone()).await;
        if let Some(p) = &options.progress {
            p(Progress::Finished(&report));
        }
        reports.push(report);
    }
    Report {
        driver,
        cases: reports,
    }
}

pub(crate) async fn run_one(
    case: &Case,
    harness: Arc<dyn Harness>,
    holder: Option<HolderCommand>,
) -> CaseReport {
    let started = Instant::now();
    let outcome = match harness.driver().await {
        Err(e) => Outcome::Failed(format!("could not connect: {e}")),
        Ok(driver) => {
            let caps = driver.capabilities();
            drop(driver);
            // An optional case runs only where the driver claims what it needs:
            // the cases themselves do not check again.
            if let Some((needs, has)) = case.needs
                && !has(&caps)
            {
                return CaseReport {
                    name: case.name,
                    outcome: Outcome::Skipped(format!("the driver does not claim `{needs}`")),
                    duration_ms: 0,
                };
            }
            let ctx = Ctx::new(harness, holder, caps, case.name);
            let outcome = match tokio::time::timeout(CASE_TIMEOUT, (case.run)(&ctx)).await {
                Err(_) => Outcome::Failed(format!(
                    "did not finish within {}",
                    lockkit_core::human_duration(CASE_TIMEOUT)
                )),
                Ok(Ok(())) => Outcome::Passed,
                Ok(Err(CaseError::Failed(m))) => Outcome::Failed(m),
                Ok(Err(CaseError::Skipped(m))) => Outcome::Skipped(m),
            };
            // Bounded: a backend a case left unreachable must not hold up the run.
            let _ = tokio::time::timeout(PURGE_TIMEOUT, ctx.purge_keys()).await;
            outcome
        }
    };
    CaseReport {
        name: case.name,
        outcome,
        duration_ms: started.elapsed().as_millis() as u64,
    }
}
