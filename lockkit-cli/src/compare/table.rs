//! The side-by-side table of `compare`: its rows (shared with the HTML report) and
//! its printing on stdout.

use lockkit_conformance::Outcome;

use super::{BackendReport, CompareReport};
use crate::bench::Compared;
use crate::probe::ProbeReport;

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

pub(super) fn print_table(report: &CompareReport) {
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
