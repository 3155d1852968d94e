//! The report's plots: latency distributions (one line per backend) and horizontal
//! bars on a log scale (throughput, fault probes).

use std::fmt::Write as _;

use super::esc;
use super::svg::{Frame, LogAxis, color, count_label, micros_label, x_grid};
use crate::bench::Latency;
use crate::compare::BackendReport;

/// A latency distribution per backend: x = latency (log), y = percentile.
/// `series(b)` gives the solid line (lockkit) and an optional dashed one (the
/// floor's distribution), and `reference(b)` an optional dashed vertical line (a
/// single floor figure, in µs); `caption` says which is which.
pub(super) fn cdf_plot(
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
pub(super) fn bar_plot(
    out: &mut String,
    title: &str,
    axis: &str,
    bars: &[(String, usize, f64, bool)],
) {
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
