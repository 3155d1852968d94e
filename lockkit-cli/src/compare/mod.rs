//! `lockkit compare URL URL…`: the conformance check, the benchmarks and the fault
//! probes on each backend, side by side.
//!
//! Backends run one after the other (so they do not disturb each other's
//! measurements). The result is a table on stdout, one self-contained HTML file
//! with SVG plots ([`crate::report_html`]), and JSON.
//!
//! This module holds the command and its report; [`backend`] runs one backend,
//! [`preflight`] checks the arguments before anything runs, [`table`] builds the
//! side-by-side table.

mod backend;
mod preflight;
mod table;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lockkit::{LockError, redact_url};
use lockkit_conformance::{Outcome, Report};
use serde::Serialize;

use crate::bench::{BenchReport, Settings};
use crate::duration::{as_millis, parse_duration};
use crate::probe::ProbeReport;
use crate::progress::Bars;
use backend::backend;
use preflight::preflight;
use table::print_table;
pub(crate) use table::table;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    urls: crate::url_arg::ManyUrls,
    #[command(flatten)]
    settings: Settings,
    /// The lease of the probes' holder process (its watchdog TTL).
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    lease: Duration,
    /// Run only conformance cases whose name contains this text (or one of
    /// several, comma-separated).
    #[arg(long)]
    filter: Option<String>,
    /// Skip the conformance check.
    #[arg(long)]
    no_check: bool,
    /// Where to write the HTML report.
    #[arg(long, default_value = "lockkit-compare.html")]
    html: PathBuf,
    /// Where to write the JSON report.
    #[arg(long, default_value = "lockkit-compare.json")]
    json: PathBuf,
}

/// Everything `compare` found on one backend.
#[derive(Debug, Serialize)]
pub(crate) struct BackendReport {
    /// The column label: the driver, numbered if two backends share it.
    pub(crate) label: String,
    /// The URL, without credentials.
    pub(crate) url: String,
    /// The driver's name, once connected.
    pub(crate) driver: Option<String>,
    /// What stopped this backend's run early, if anything.
    pub(crate) error: Option<String>,
    pub(crate) check: Option<Report>,
    pub(crate) bench: Option<BenchReport>,
    pub(crate) probes: Vec<ProbeReport>,
}

impl BackendReport {
    /// The driver, or the URL's scheme before it connected.
    fn name(&self) -> &str {
        self.driver
            .as_deref()
            .unwrap_or_else(|| self.url.split(':').next().unwrap_or(&self.url))
    }

    /// Whether anything failed: an error, a conformance case or a probe.
    pub(crate) fn failed(&self) -> bool {
        self.error.is_some()
            || self.check.as_ref().is_some_and(|c| !c.ok())
            || self
                .probes
                .iter()
                .any(|p| matches!(p.outcome, Outcome::Failed(_)))
    }
}

/// The machine the run was on.
#[derive(Debug, Serialize)]
pub(crate) struct Machine {
    pub(crate) os: &'static str,
    pub(crate) arch: &'static str,
    pub(crate) cpus: usize,
}

/// The whole comparison.
#[derive(Debug, Serialize)]
pub(crate) struct CompareReport {
    pub(crate) lockkit_version: &'static str,
    /// When the run started, in seconds since the Unix epoch.
    pub(crate) started_unix_s: u64,
    pub(crate) machine: Machine,
    pub(crate) settings: Settings,
    #[serde(rename = "probe_lease_ms", serialize_with = "as_millis")]
    pub(crate) lease: Duration,
    pub(crate) backends: Vec<BackendReport>,
}

/// Writes a report into the file [`preflight`] created for it.
fn write_file(
    mut file: std::fs::File,
    path: &std::path::Path,
    contents: &str,
) -> Result<(), LockError> {
    use std::io::Write;
    file.write_all(contents.as_bytes())
        .map_err(|e| LockError::Config(format!("cannot write {}: {e}", path.display())))
}

/// Column labels: the driver's name, numbered when two backends share one (the
/// same URL given twice, or two Redis servers).
fn label_apart(backends: &mut [BackendReport]) {
    let names: Vec<String> = backends.iter().map(|b| b.name().to_owned()).collect();
    for (i, b) in backends.iter_mut().enumerate() {
        let same = names.iter().filter(|n| **n == names[i]).count();
        b.label = if same > 1 {
            let nth = names[..=i].iter().filter(|n| **n == names[i]).count();
            format!("{}#{nth}", names[i])
        } else {
            names[i].clone()
        };
    }
}

pub(crate) async fn run(args: Args) -> Result<ExitCode, LockError> {
    let started_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let urls = args.urls.get()?;
    let (html_file, json_file) = preflight(&args)?;
    for url in &urls {
        if let Err(e @ (LockError::InvalidUrl { .. } | LockError::Config(_))) =
            lockkit::driver::connect(url).await
        {
            return Err(e);
        }
    }
    let bars = Bars::new(false);
    let mut backends = Vec::new();
    for url in &urls {
        eprintln!("{}", redact_url(url));
        backends.push(backend(url, &args, bars).await);
    }
    label_apart(&mut backends);
    let report = CompareReport {
        lockkit_version: env!("CARGO_PKG_VERSION"),
        started_unix_s,
        machine: Machine {
            os: std::env::consts::OS,
            arch: std::env::consts::ARCH,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        },
        settings: args.settings.clone(),
        lease: args.lease,
        backends,
    };
    print_table(&report);
    let json = serde_json::to_string_pretty(&report)
        .map_err(|e| LockError::Config(format!("cannot encode the report as JSON: {e}")))?;
    write_file(json_file, &args.json, &json)?;
    write_file(html_file, &args.html, &crate::report_html::render(&report))?;
    println!(
        "report: {} (HTML), {} (JSON)",
        args.html.display(),
        args.json.display()
    );
    Ok(if report.backends.iter().any(BackendReport::failed) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
