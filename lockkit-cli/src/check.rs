//! `lockkit check URL`: the conformance suite against a live backend.

use std::process::{Command, ExitCode};
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressStyle};
use lockkit::{LockDriver, LockError, LockKey, redact_url};
use lockkit_conformance::{Harness, Outcome, Progress, RunOptions};

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The backend, e.g. sqlite:///tmp/locks.db (also read from LOCKKIT_URL).
    #[arg(env = "LOCKKIT_URL")]
    url: String,
    /// Print the report as JSON on stdout instead of a table.
    #[arg(long)]
    json: bool,
    /// Run only cases whose name contains this text.
    #[arg(long)]
    filter: Option<String>,
}

/// Drivers connected by URL; holds vanish through `force_release`.
struct UrlHarness {
    url: String,
    admin: Arc<dyn LockDriver>,
}

#[lockkit::async_trait]
impl Harness for UrlHarness {
    async fn driver(&self) -> Result<Arc<dyn LockDriver>, LockError> {
        lockkit::connect_driver(&self.url).await
    }

    async fn vanish(&self, key: &LockKey) -> Result<(), LockError> {
        self.admin.force_release(key).await.map(|_| ())
    }

    fn holder_url(&self) -> Option<String> {
        Some(self.url.clone())
    }
}

pub(crate) async fn run(args: Args) -> Result<ExitCode, LockError> {
    let admin = lockkit::connect_driver(&args.url).await?;
    let driver_name = admin.name();
    let harness = Arc::new(UrlHarness {
        url: args.url.clone(),
        admin,
    });
    let total = lockkit_conformance::CASES.len() as u64;
    let bar = if args.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(total)
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let progress_bar = bar.clone();
    let options = RunOptions::new()
        .holder(Arc::new(|| {
            let mut cmd = Command::new(std::env::current_exe().unwrap_or_default());
            cmd.arg("__hold");
            cmd
        }))
        .filter(args.filter.clone())
        .progress(move |p| match p {
            Progress::Started(_, _, name) => progress_bar.set_message(name),
            Progress::Finished(_) => progress_bar.inc(1),
            _ => {}
        });
    let report = lockkit_conformance::run(harness, options).await;
    bar.finish_and_clear();

    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        println!("conformance of {} ({driver_name})", redact_url(&args.url));
        for case in &report.cases {
            let (status, reason) = match &case.outcome {
                Outcome::Passed => ("pass", ""),
                Outcome::Failed(r) => ("FAIL", r.as_str()),
                Outcome::Skipped(r) => ("skip", r.as_str()),
            };
            println!(
                "  {status:4}  {:50} {:>6} ms  {reason}",
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
