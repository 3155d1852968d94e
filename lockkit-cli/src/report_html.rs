//! The HTML report of `compare`: one self-contained file (inline CSS and SVG, no
//! scripts, nothing fetched), with the side-by-side table, SVG plots of the latency
//! distributions, hand-off times, throughput and fault probes, and every
//! conformance case.

use std::fmt::Write as _;

use lockkit_conformance::Outcome;

use crate::bench::Latency;
use crate::compare::{BackendReport, CompareReport};

/// One color per backend, in order (Tableau 10). Tests look for these exact colors
/// in a screenshot of the report.
pub(crate) const PALETTE: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#bcbd22", "#7f7f7f",
];

fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

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

/// Plot geometry: the SVG's size and the plotting area inside its margins.
struct Frame {
    width: f64,
    height: f64,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

impl Frame {
    fn new(width: f64, height: f64, left: f64) -> Self {
        Self {
            width,
            height,
            left,
            right: 20.0,
            top: 16.0,
            bottom: 44.0,
        }
    }

    fn inner_width(&self) -> f64 {
        self.width - self.left - self.right
    }

    fn inner_height(&self) -> f64 {
        self.height - self.top - self.bottom
    }

    fn open(&self, out: &mut String, title: &str) {
        let _ = write!(
            out,
            r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="{t}"><rect width="{w}" height="{h}" fill="#fff"/>"##,
            w = self.width,
            h = self.height,
            t = esc(title)
        );
    }
}

/// A log10 axis over `[lo, hi]` (both > 0), mapped to `[0, len]`.
struct LogAxis {
    lo: f64,
    hi: f64,
    len: f64,
}

impl LogAxis {
    fn new(lo: f64, hi: f64, len: f64) -> Self {
        let lo = 10f64.powf(lo.max(1.0).log10().floor());
        let hi = 10f64.powf(hi.max(lo * 10.0).log10().ceil());
        Self { lo, hi, len }
    }

    fn at(&self, v: f64) -> f64 {
        let (a, b) = (self.lo.log10(), self.hi.log10());
        (v.max(self.lo).log10() - a) / (b - a) * self.len
    }

    /// Decades between `lo` and `hi`.
    fn ticks(&self) -> Vec<f64> {
        let mut t = Vec::new();
        let mut v = self.lo;
        while v <= self.hi * 1.0001 {
            t.push(v);
            v *= 10.0;
        }
        t
    }
}

/// A vertical grid line and a label at each decade of `x`.
fn x_grid(out: &mut String, f: &Frame, x: &LogAxis, label: fn(f64) -> String) {
    for t in x.ticks() {
        let px = f.left + x.at(t);
        let _ = write!(
            out,
            r##"<line x1="{px:.1}" y1="{}" x2="{px:.1}" y2="{}" stroke="#ddd"/><text x="{px:.1}" y="{}" font-size="11" text-anchor="middle" fill="#444">{}</text>"##,
            f.top,
            f.top + f.inner_height(),
            f.top + f.inner_height() + 16.0,
            label(t)
        );
    }
}

fn micros_label(us: f64) -> String {
    match us {
        v if v >= 1e6 => format!("{} s", v / 1e6),
        v if v >= 1e3 => format!("{} ms", v / 1e3),
        v => format!("{v} µs"),
    }
}

fn count_label(v: f64) -> String {
    match v {
        v if v >= 1e6 => format!("{}M", v / 1e6),
        v if v >= 1e3 => format!("{}k", v / 1e3),
        v => format!("{v}"),
    }
}

/// A latency distribution per backend: x = latency (log), y = percentile.
/// `series(b)` gives the solid line (lockkit) and an optional dashed one (the
/// floor's distribution), and `reference(b)` an optional dashed vertical line (a
/// single floor figure, in µs); `caption` says which is which.
fn cdf_plot(
    out: &mut String,
    title: &str,
    caption: &str,
    backends: &[BackendReport],
    series: impl Fn(&BackendReport) -> (Option<&Latency>, Option<&Latency>),
    reference: impl Fn(&BackendReport) -> Option<u64>,
) {
    let all: Vec<(usize, &Latency, bool)> = backends
        .iter()
        .enumerate()
        .flat_map(|(i, b)| {
            let (solid, dashed) = series(b);
            [solid.map(|l| (i, l, false)), dashed.map(|l| (i, l, true))]
        })
        .flatten()
        .collect();
    if all.is_empty() {
        let _ = write!(out, "<p>No data for {}.</p>", esc(title));
        return;
    }
    let references: Vec<(usize, f64)> = backends
        .iter()
        .enumerate()
        .filter_map(|(i, b)| reference(b).map(|us| (i, us.max(1) as f64)))
        .collect();
    let values = all
        .iter()
        .flat_map(|(_, l, _)| l.cdf.iter().map(|p| p.1 as f64))
        .chain(references.iter().map(|(_, v)| *v));
    let (lo, hi) = values.fold((f64::MAX, 1.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let f = Frame::new(760.0, 340.0, 56.0);
    let x = LogAxis::new(lo, hi, f.inner_width());
    let y = |p: f64| f.top + f.inner_height() * (1.0 - p / 100.0);
    f.open(out, title);
    x_grid(out, &f, &x, micros_label);
    for p in [0.0, 25.0, 50.0, 75.0, 90.0, 99.0] {
        let py = y(p);
        let _ = write!(
            out,
            r##"<line x1="{}" y1="{py:.1}" x2="{}" y2="{py:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" font-size="11" text-anchor="end" fill="#444">p{p}</text>"##,
            f.left,
            f.left + f.inner_width(),
            f.left - 6.0,
            py + 4.0
        );
    }
    let _ = write!(
        out,
        r##"<text x="{}" y="{}" font-size="12" text-anchor="middle" fill="#444">latency (log scale); {}</text>"##,
        f.left + f.inner_width() / 2.0,
        f.height - 6.0,
        esc(caption)
    );
    for (i, v) in references {
        let px = f.left + x.at(v);
        let _ = write!(
            out,
            r#"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="{}" stroke-width="1.5" stroke-dasharray="6 4"/>"#,
            f.top,
            f.top + f.inner_height(),
            color(i)
        );
    }
    for (i, l, dashed) in all {
        let points: Vec<String> = l
            .cdf
            .iter()
            .map(|&(p, v)| format!("{:.1},{:.1}", f.left + x.at(v as f64), y(p)))
            .collect();
        let (width, dash) = if dashed {
            (1.5, r#" stroke-dasharray="6 4""#)
        } else {
            (3.0, "")
        };
        let _ = write!(
            out,
            r#"<polyline fill="none" stroke="{}" stroke-width="{width}"{dash} points="{}"/>"#,
            color(i),
            points.join(" ")
        );
    }
    out.push_str("</svg>");
}

/// Horizontal bars on a log scale: `(label, backend index, value, faded)`.
fn bar_plot(out: &mut String, title: &str, axis: &str, bars: &[(String, usize, f64, bool)]) {
    if bars.is_empty() {
        let _ = write!(out, "<p>No data for {}.</p>", esc(title));
        return;
    }
    let row = 16.0;
    let mut f = Frame::new(760.0, 0.0, 190.0);
    f.height = f.top + f.bottom + row * bars.len() as f64;
    let hi = bars.iter().map(|b| b.2).fold(1.0, f64::max);
    let lo = bars.iter().map(|b| b.2).fold(hi, f64::min).max(1.0);
    let x = LogAxis::new(lo / 10.0, hi, f.inner_width());
    f.open(out, title);
    x_grid(out, &f, &x, count_label);
    for (n, (label, i, value, faded)) in bars.iter().enumerate() {
        let top = f.top + row * n as f64 + 2.0;
        let opacity = if *faded { r#" fill-opacity="0.4""# } else { "" };
        let _ = write!(
            out,
            r##"<text x="{}" y="{:.1}" font-size="11" text-anchor="end" fill="#222">{}</text><rect x="{}" y="{top:.1}" width="{:.1}" height="{}" fill="{}"{opacity}/><text x="{:.1}" y="{:.1}" font-size="10" fill="#444">{value:.0}</text>"##,
            f.left - 6.0,
            top + 10.0,
            esc(label),
            f.left,
            x.at(*value).max(1.0),
            row - 4.0,
            color(*i),
            f.left + x.at(*value).max(1.0) + 4.0,
            top + 10.0,
        );
    }
    let _ = write!(
        out,
        r##"<text x="{}" y="{}" font-size="12" text-anchor="middle" fill="#444">{}</text></svg>"##,
        f.left + f.inner_width() / 2.0,
        f.height - 6.0,
        esc(axis)
    );
}

fn legend(out: &mut String, backends: &[BackendReport]) {
    out.push_str("<ul class=\"meta\">");
    for (i, b) in backends.iter().enumerate() {
        let _ = write!(
            out,
            r#"<li><span class="swatch" style="background:{}"></span><b>{}</b>: {}</li>"#,
            color(i),
            esc(&b.label),
            esc(&b.url)
        );
    }
    out.push_str("</ul>");
}

fn summary_table(out: &mut String, report: &CompareReport) {
    out.push_str("<table><tr><th></th>");
    for b in &report.backends {
        let _ = write!(out, "<th>{}</th>", esc(&b.label));
    }
    out.push_str("</tr>");
    // URLs are long: they are listed under the legend instead.
    for (label, cells) in crate::compare::table(report).into_iter().skip(1) {
        let _ = write!(out, "<tr><td>{}</td>", esc(label.trim()));
        for c in cells {
            let class = if c.contains("FAIL") || c == "NO" || c == "ERROR" {
                " class=\"fail\""
            } else {
                ""
            };
            let _ = write!(out, "<td{class}>{}</td>", esc(&c));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
}

fn cases_table(out: &mut String, backends: &[BackendReport]) {
    let Some(first) = backends.iter().find_map(|b| b.check.as_ref()) else {
        out.push_str("<p>The conformance check was not run.</p>");
        return;
    };
    out.push_str("<table><tr><th>case</th>");
    for b in backends {
        let _ = write!(out, "<th>{}</th>", esc(&b.label));
    }
    out.push_str("</tr>");
    for case in &first.cases {
        let _ = write!(out, "<tr><td>{}</td>", esc(case.name));
        for b in backends {
            let found = b
                .check
                .as_ref()
                .and_then(|c| c.cases.iter().find(|x| x.name == case.name));
            match found.map(|c| &c.outcome) {
                Some(Outcome::Passed) => out.push_str(r#"<td class="pass">pass</td>"#),
                Some(Outcome::Failed(r)) => {
                    let _ = write!(out, r#"<td class="fail" title="{}">FAIL</td>"#, esc(r));
                }
                Some(Outcome::Skipped(r)) => {
                    let _ = write!(out, r#"<td class="skip" title="{}">skip</td>"#, esc(r));
                }
                None => out.push_str("<td>-</td>"),
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
}

fn reasons(out: &mut String, backends: &[BackendReport]) {
    let mut items = String::new();
    for b in backends {
        if let Some(e) = &b.error {
            let _ = write!(
                items,
                "<li><b>{}</b>: error: {}</li>",
                esc(&b.label),
                esc(e)
            );
        }
        for case in b.check.iter().flat_map(|c| &c.cases) {
            if let Outcome::Failed(r) = &case.outcome {
                let _ = write!(
                    items,
                    "<li><b>{}</b> {} failed: {}</li>",
                    esc(&b.label),
                    esc(case.name),
                    esc(r)
                );
            }
        }
        for p in &b.probes {
            let (verb, reason) = match &p.outcome {
                Outcome::Failed(r) => ("failed", r),
                Outcome::Skipped(r) => ("skipped", r),
                Outcome::Passed => continue,
            };
            let _ = write!(
                items,
                "<li><b>{}</b> probe {} {verb}: {}</li>",
                esc(&b.label),
                esc(p.name),
                esc(reason)
            );
        }
    }
    if !items.is_empty() {
        let _ = write!(out, "<h2>Failures and skips</h2><ul>{items}</ul>");
    }
}

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

    #[test]
    fn log_axis_spans_whole_decades() {
        let x = LogAxis::new(230.0, 4_500.0, 300.0);
        assert_eq!(x.ticks(), vec![100.0, 1_000.0, 10_000.0]);
        assert!((x.at(1_000.0) - 150.0).abs() < 1e-9);
        assert!(
            x.at(1.0).abs() < 1e-9,
            "values below the axis sit at its start"
        );
    }
}
