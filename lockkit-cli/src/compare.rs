//! `lockkit compare URL URL…`: the conformance check, the benchmarks and the fault
//! probes on each backend, side by side.
//!
//! Backends run one after the other (so they do not disturb each other's
//! measurements). The result is a table on stdout, one self-contained HTML file
//! with SVG plots ([`crate::report_html`]), and JSON.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lockkit::{LockError, redact_url};
use lockkit_conformance::{Outcome, Report};
use serde::Serialize;

use crate::bench::{self, BenchReport, Compared, Settings};
use crate::duration::{as_millis, parse_duration};
use crate::probe::{self, ProbeReport};
use crate::progress::Bars;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    urls: crate::url_arg::ManyUrls,
    #[command(flatten)]
    settings: Settings,
    /// The lease of the probes' holder process (its watchdog TTL).
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    lease: Duration,
    /// Run only conformance cases whose name contains this text.
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

/// Runs everything on one backend; stops at the first error (recorded, not returned).
async fn backend(url: &str, args: &Args, bars: Bars) -> BackendReport {
    let mut report = BackendReport {
        label: String::new(),
        url: redact_url(url),
        driver: None,
        error: None,
        check: None,
        bench: None,
        probes: Vec::new(),
    };
    let result: Result<(), LockError> = async {
        if !args.no_check {
            let check = crate::check::conformance(url, args.filter.clone(), bars).await?;
            report.driver = Some(check.driver.clone());
            report.check = Some(check);
        }
        let bench = bench::measure(url, &args.settings, bars).await?;
        report.driver = Some(bench.driver.clone());
        report.bench = Some(bench);
        let bar = bars.bar(2, "fault probes");
        let run = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let stalled = crate::scratch::key(&format!("compare-{run}/stalled"));
        let killed = crate::scratch::key(&format!("compare-{run}/killed"));
        bar.set_message("stalled holder");
        let probes = async {
            report
                .probes
                .push(probe::stalled_holder(url, &stalled, args.lease).await?);
            bar.inc(1);
            bar.set_message("killed holder");
            report
                .probes
                .push(probe::killed_holder(url, &killed, args.lease).await?);
            Ok::<(), LockError>(())
        }
        .await;
        crate::scratch::purge(url, [stalled, killed]).await;
        probes?;
        bar.finish_and_clear();
        Ok(())
    }
    .await;
    if let Err(e) = result {
        crate::print_error(&format!("on {}", report.url), &e);
        report.error = Some(e.to_string());
    }
    report
}

/// A cell of the terminal table.
fn cell<T>(value: Option<T>, f: impl FnOnce(T) -> String) -> String {
    value.map_or_else(|| "-".to_owned(), f)
}

fn ms(us: u64) -> String {
    if us >= 10_000 {
        format!("{:.0} ms", us as f64 / 1000.0)
    } else {
        format!("{:.2} ms", us as f64 / 1000.0)
    }
}

fn probe_cell(p: Option<&ProbeReport>) -> String {
    match p {
        None => "-".to_owned(),
        Some(p) => match (&p.outcome, p.freed_after_ms) {
            (Outcome::Passed, Some(freed)) => format!("ok, {freed} ms"),
            (Outcome::Skipped(_), _) => "skipped".to_owned(),
            (Outcome::Failed(_), _) | (Outcome::Passed, None) => "FAILED".to_owned(),
        },
    }
}

fn contended(r: &BackendReport) -> Option<&Compared> {
    r.bench.as_ref().and_then(|b| b.contended.as_ref())
}

fn many_keys(r: &BackendReport) -> Option<&Compared> {
    r.bench.as_ref().and_then(|b| b.many_keys.as_ref())
}

/// A throughput run's lockkit grants per second.
fn grants(run: Option<&Compared>) -> String {
    cell(run, |c| format!("{:.0}", c.lockkit.grants_per_second))
}

/// A throughput run's lockkit/floor ratio.
fn ratio(run: Option<&Compared>) -> String {
    cell(run.and_then(|c| c.ratio_lockkit_over_floor), |v| {
        format!("{v:.2}×")
    })
}

/// The rows of the side-by-side table: a label, then one cell per backend.
pub(crate) fn table(report: &CompareReport) -> Vec<(String, Vec<String>)> {
    let b = &report.backends;
    let row = |label: &str, f: &dyn Fn(&BackendReport) -> String| {
        (label.to_owned(), b.iter().map(f).collect::<Vec<_>>())
    };
    let probe = |r: &BackendReport, name: &str| r.probes.iter().find(|p| p.name == name).cloned();
    vec![
        row("url", &|r| r.url.clone()),
        row("conformance pass/fail/skip", &|r| {
            if r.error.is_some() && r.check.is_none() {
                return "ERROR".to_owned();
            }
            cell(r.check.as_ref(), |c| {
                let (p, f, s) = c.counts();
                format!("{p}/{f}/{s}")
            })
        }),
        row("lock+release p50", &|r| {
            cell(r.bench.as_ref(), |x| ms(x.lockkit.p50_us))
        }),
        row("lock+release p99", &|r| {
            cell(r.bench.as_ref(), |x| ms(x.lockkit.p99_us))
        }),
        row("  p50 lockkit/floor", &|r| {
            cell(
                r.bench
                    .as_ref()
                    .and_then(|x| x.p50_ratio_lockkit_over_floor),
                |v| format!("{v:.2}×"),
            )
        }),
        row("hand-off p50", &|r| {
            cell(r.bench.as_ref().and_then(|x| x.handoff.as_ref()), |h| {
                ms(h.p50_us)
            })
        }),
        row("hand-off p99", &|r| {
            cell(r.bench.as_ref().and_then(|x| x.handoff.as_ref()), |h| {
                ms(h.p99_us)
            })
        }),
        row("one key grants/s", &|r| grants(contended(r))),
        row("  lockkit/floor", &|r| ratio(contended(r))),
        row("many keys grants/s", &|r| grants(many_keys(r))),
        row("  lockkit/floor", &|r| ratio(many_keys(r))),
        row("stalled holder: freed after", &|r| {
            probe_cell(probe(r, "stalled_holder").as_ref())
        }),
        row("  stale write rejected", &|r| {
            cell(
                probe(r, "stalled_holder").and_then(|p| p.stale_write_rejected),
                |v| if v { "yes" } else { "NO" }.to_owned(),
            )
        }),
        row("  holder told lost after", &|r| {
            cell(
                probe(r, "stalled_holder").and_then(|p| p.holder_told_lost_after_ms),
                |v| format!("{v} ms"),
            )
        }),
        row("killed holder: freed after", &|r| {
            probe_cell(probe(r, "killed_holder").as_ref())
        }),
    ]
}

fn print_table(report: &CompareReport) {
    let rows = table(report);
    let label_width = rows
        .iter()
        .map(|(l, _)| l.chars().count())
        .max()
        .unwrap_or(0);
    let names: Vec<&str> = report.backends.iter().map(|b| b.label.as_str()).collect();
    // Each column is as wide as its widest cell, the url row excepted (it is
    // printed last, one per line, so the table stays narrow).
    let widths: Vec<usize> = (0..names.len())
        .map(|i| {
            rows.iter()
                .skip(1)
                .map(|(_, cells)| cells[i].chars().count())
                .chain([names[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    print!("{:label_width$}", "");
    for (name, w) in names.iter().zip(&widths) {
        print!("  {name:>w$}");
    }
    println!();
    for (label, cells) in rows.iter().skip(1) {
        print!("{label:label_width$}");
        for (c, w) in cells.iter().zip(&widths) {
            print!("  {c:>w$}");
        }
        println!();
    }
    for b in &report.backends {
        println!("{}: {}", b.label, b.url);
        if let Some(e) = &b.error {
            println!("  error: {e}");
        }
        for case in b.check.iter().flat_map(|c| &c.cases) {
            if let Outcome::Failed(reason) = &case.outcome {
                println!("  conformance FAIL {}: {reason}", case.name);
            }
        }
        for p in &b.probes {
            if let Outcome::Failed(reason) = &p.outcome {
                println!("  probe FAIL {}: {reason}", p.name);
            }
        }
    }
}

fn write_file(
    mut file: std::fs::File,
    path: &std::path::Path,
    contents: &str,
) -> Result<(), LockError> {
    use std::io::Write;
    file.write_all(contents.as_bytes())
        .map_err(|e| LockError::Config(format!("cannot write {}: {e}", path.display())))
}

/// The probes' lease must leave room for the stalled-holder probe to tell a grant
/// before the lease from one after it, and not make the run crawl.
const PROBE_LEASE: std::ops::RangeInclusive<Duration> =
    Duration::from_millis(100)..=Duration::from_secs(60);

/// Everything that can be checked before the first backend runs: the lease, the
/// output files (created now, so a bad path costs nothing), and each URL (an
/// invalid one ends the run; an unreachable one is reported in its column).
fn preflight(args: &Args) -> Result<(std::fs::File, std::fs::File), LockError> {
    if !PROBE_LEASE.contains(&args.lease) {
        return Err(LockError::Config(format!(
            "--lease {} is out of range: the probes' holder needs a lease from {} to {}",
            lockkit::driver::human_duration(args.lease),
            lockkit::driver::human_duration(*PROBE_LEASE.start()),
            lockkit::driver::human_duration(*PROBE_LEASE.end()),
        )));
    }
    if args.html == args.json {
        return Err(LockError::Config(format!(
            "--html and --json are both {}: give them different paths",
            args.html.display()
        )));
    }
    Ok((
        open_output(&args.html, "--html")?,
        open_output(&args.json, "--json")?,
    ))
}

/// Creates `path` for a report now, so that a path that cannot be written is
/// reported before anything runs.
fn open_output(path: &std::path::Path, option: &str) -> Result<std::fs::File, LockError> {
    std::fs::File::create(path).map_err(|e| {
        LockError::Config(format!(
            "cannot write {}: {e}; choose another path with {option}",
            path.display()
        ))
    })
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
