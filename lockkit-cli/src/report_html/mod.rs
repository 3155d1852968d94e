//! The HTML report of `compare`: one self-contained file (inline CSS and SVG, no
//! scripts, nothing fetched), with the side-by-side table, SVG plots of the latency
//! distributions, hand-off times, throughput and fault probes, and every
//! conformance case.
//!
//! The page is put together here; [`svg`] holds the plot geometry and colors,
//! [`plots`] the latency and bar plots, [`tables`] the legend and tables.

mod plots;
mod svg;
mod tables;

use std::fmt::Write as _;

use crate::compare::CompareReport;
use plots::{bar_plot, cdf_plot};
use tables::{cases_table, legend, reasons, summary_table};

/// `s` with HTML's special characters escaped.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; background: #fff; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; white-space: nowrap; }
td.pass { background: #e6f4ea; } td.fail { background: #fde2e1; font-weight: bold; }
td.skip { background: #f1f1f1; color: #666; }
.meta { color: #555; } ul.meta { list-style: none; padding: 0; } svg { display: block; margin: 8px 0 16px; }
.swatch { display: inline-block; width: 12px; height: 12px; margin-right: 4px; }
";

/// `2026-11-23 04:05 UTC` for seconds since the Unix epoch.
fn utc(unix_s: u64) -> String {
    // Days to a civil date (Howard Hinnant's days_from_civil, inverted).
    let days = (unix_s / 86_400) as i64;
    let (hour, minute) = (unix_s % 86_400 / 3600, unix_s % 3600 / 60);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02} UTC")
}

/// The report as one HTML document.
pub(crate) fn render(report: &CompareReport) -> String {
    let b = &report.backends;
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>lockkit compare</title><style>{STYLE}</style></head><body><h1>lockkit compare</h1>"#
    );
    let s = &report.settings;
    let _ = write!(
        out,
        r#"<p class="meta">lockkit {} · {} {} with {} CPUs · started {} · {} lock+release pairs, {} hand-offs, {} clients, {} keys, {} ms per throughput run, probe lease {} ms. Figures are from one run on one machine; compare them within the run.</p>"#,
        esc(report.lockkit_version),
        report.machine.os,
        report.machine.arch,
        report.machine.cpus,
        utc(report.started_unix_s),
        s.iterations,
        s.handoffs,
        s.clients,
        s.keys,
        s.duration.as_millis(),
        report.lease.as_millis(),
    );
    legend(&mut out, b);
    out.push_str("<h2>Side by side</h2>");
    summary_table(&mut out, report);

    out.push_str("<h2>Uncontended lock+release latency</h2>");
    cdf_plot(
        &mut out,
        "uncontended lock+release latency",
        "solid: lockkit, dashed: raw floor",
        b,
        |r| {
            (
                r.bench.as_ref().map(|x| &x.lockkit),
                r.bench.as_ref().and_then(|x| x.floor.as_ref()),
            )
        },
        |_| None,
    );
    out.push_str("<h2>Hand-off latency (release → grant to a waiter on another connection)</h2>");
    cdf_plot(
        &mut out,
        "hand-off latency",
        "solid: lockkit; dashed line: the raw floor's uncontended lock+release p50 (a floor client never waits)",
        b,
        |r| (r.bench.as_ref().and_then(|x| x.handoff.as_ref()), None),
        |r| {
            r.bench
                .as_ref()
                .and_then(|x| x.floor.as_ref())
                .map(|f| f.p50_us)
        },
    );

    out.push_str("<h2>Throughput</h2><p>Solid: lockkit; faded: raw floor (clients spin on the raw commands).</p>");
    let mut bars = Vec::new();
    for (i, r) in b.iter().enumerate() {
        let Some(bench) = &r.bench else { continue };
        for (what, c) in [
            ("one key", &bench.contended),
            ("many keys", &bench.many_keys),
        ] {
            if let Some(c) = c {
                bars.push((
                    format!("{} {what}", r.label),
                    i,
                    c.lockkit.grants_per_second,
                    false,
                ));
                if let Some(f) = &c.floor {
                    bars.push((
                        format!("{} {what} floor", r.label),
                        i,
                        f.grants_per_second,
                        true,
                    ));
                }
            }
        }
    }
    bar_plot(
        &mut out,
        "throughput",
        "grants per second (log scale)",
        &bars,
    );

    out.push_str("<h2>Fault probes: time until a waiter got the lock</h2><p>Solid: holder stalled with SIGSTOP; faded: holder killed with SIGKILL.</p>");
    let mut probes = Vec::new();
    for (i, r) in b.iter().enumerate() {
        for p in &r.probes {
            if let Some(ms) = p.freed_after_ms {
                let what = if p.name == "stalled_holder" {
                    "stalled"
                } else {
                    "killed"
                };
                probes.push((
                    format!("{} {what}", r.label),
                    i,
                    ms.max(1) as f64,
                    p.name != "stalled_holder",
                ));
            }
        }
    }
    bar_plot(
        &mut out,
        "fault probes",
        "milliseconds from SIGSTOP/SIGKILL to the waiter's grant (log scale)",
        &probes,
    );

    out.push_str("<h2>Conformance cases</h2>");
    cases_table(&mut out, b);
    reasons(&mut out, b);
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_in_names_and_reasons() {
        assert_eq!(
            esc(r#"<b>"x" & 'y'</b>"#),
            "&lt;b&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/b&gt;"
        );
    }

    #[test]
    fn unix_seconds_become_a_utc_date() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc(1_795_406_311), "2026-11-23 03:58 UTC");
    }
}
