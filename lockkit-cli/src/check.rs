//! `lockkit check URL`: the conformance suite against a live backend.

use std::process::{Command, ExitCode};
use std::sync::Arc;

use lockkit::driver::LockDriver;
use lockkit::{LockError, LockKey, redact_url};
use lockkit_conformance::{Harness, Outcome, Progress, Report, RunOptions};

use crate::progress::Bars;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    url: crate::url_arg::OneUrl,
    /// Print the report as JSON on stdout instead of a table.
    #[arg(long)]
    json: bool,
    /// Run only cases whose name contains this text (or one of several,
    /// comma-separated: `--filter fencing,fifo`).
    #[arg(long)]
    filter: Option<String>,
}

/// Drivers connected by URL; holds vanish through `force_release`.
struct UrlHarness {
    url: String,
    admin: Arc<dyn LockDriver>,
}

#[lockkit::driver::async_trait]
impl Harness for UrlHarness {
    async fn driver(&self) -> Result<Arc<dyn LockDriver>, LockError> {
        lockkit::driver::connect(&self.url).await
    }

    async fn vanish(&self, key: &LockKey) -> Result<(), LockError> {
        self.admin.force_release(key).await.map(|_| ())
    }

    fn holder_url(&self) -> Option<String> {
        Some(self.url.clone())
    }
}

/// The command that starts a holder child process: this binary's `__hold`.
pub(crate) fn holder_command() -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap_or_default());
    cmd.arg("__hold");
    cmd
}

/// Runs the suite (cases whose name contains `filter`, or one of its
/// comma-separated parts) against `url`, with a
/// progress bar that names the running case.
pub(crate) async fn conformance(
    url: &str,
    filter: Option<String>,
    bars: Bars,
) -> Result<Report, LockError> {
    let total = lockkit_conformance::CASES
        .iter()
        .filter(|c| lockkit_conformance::matches_filter(c.name, filter.as_deref()))
        .count() as u64;
    if total == 0 {
        let names: Vec<&str> = lockkit_conformance::CASES.iter().map(|c| c.name).collect();
        return Err(LockError::Config(format!(
            "no conformance case matches --filter {}; the cases are:\n  {}",
            filter.unwrap_or_default(),
            names.join("\n  ")
        )));
    }
    let admin = lockkit::driver::connect(url).await?;
    let harness = Arc::new(UrlHarness {
        url: url.to_owned(),
        admin,
    });
    let bar = bars.bar(total, "conformance");
    let progress_bar = bar.clone();
    let options = RunOptions::new()
        .holder(Arc::new(holder_command))
        .filter(filter)
        .progress(move |p| match p {
            Progress::Started(_, _, name) => progress_bar.set_message(name),
            Progress::Finished(_) => progress_bar.inc(1),
            _ => {}
        });
    let report = lockkit_conformance::run(harness, options).await;
    bar.finish_and_clear();
    Ok(report)
}

/// `pass`, `FAIL` or `skip`, and the reason.
fn status(outcome: &Outcome) -> (&'static str, &str) {
    match outcome {
        Outcome::Passed => ("pass", ""),
        Outcome::Failed(r) => ("FAIL", r.as_str()),
        Outcome::Skipped(r) => ("skip", r.as_str()),
    }
}

pub(crate) async fn run(args: Args) -> Result<ExitCode, LockError> {
    let url = args.url.get()?;
    let report = conformance(&url, args.filter.clone(), Bars::new(args.json)).await?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        println!("conformance of {} ({})", redact_url(&url), report.driver);
        let width = report.cases.iter().map(|c| c.name.len()).max().unwrap_or(0);
        for case in &report.cases {
            let (status, reason) = status(&case.outcome);
            println!(
                "  {status:4}  {:width$} {:>6} ms  {reason}",
                case.name, case.duration_ms
            );
        }
        let (p, f, s) = report.counts();
        println!("{p} passed, {f} failed, {s} skipped");
    }
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
