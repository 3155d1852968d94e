//! The SVG building blocks of the report's plots: the backend colors, the plot
//! frame, a log-scale axis and its grid and labels.

use std::fmt::Write as _;

use super::esc;

/// One color per backend, in order (Tableau 10). Tests look for these exact colors
/// in a screenshot of the report.
pub(crate) const PALETTE: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#bcbd22", "#7f7f7f",
];

pub(super) fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Plot geometry: the SVG's size and the plotting area inside its margins.
pub(super) struct Frame {
    pub(super) width: f64,
    pub(super) height: f64,
    pub(super) left: f64,
    pub(super) right: f64,
    pub(super) top: f64,
    pub(super) bottom: f64,
}

impl Frame {
    pub(super) fn new(width: f64, height: f64, left: f64) -> Self {
        Self {
            width,
            height,
            left,
            right: 20.0,
            top: 16.0,
            bottom: 44.0,
        }
    }

    pub(super) fn inner_width(&self) -> f64 {
        self.width - self.left - self.right
    }

    pub(super) fn inner_height(&self) -> f64 {
        self.height - self.top - self.bottom
    }

    pub(super) fn open(&self, out: &mut String, title: &str) {
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
pub(super) struct LogAxis {
    lo: f64,
    hi: f64,
    len: f64,
}

impl LogAxis {
    pub(super) fn new(lo: f64, hi: f64, len: f64) -> Self {
        let lo = 10f64.powf(lo.max(1.0).log10().floor());
        let hi = 10f64.powf(hi.max(lo * 10.0).log10().ceil());
        Self { lo, hi, len }
    }

    pub(super) fn at(&self, v: f64) -> f64 {
        let (a, b) = (self.lo.log10(), self.hi.log10());
        (v.max(self.lo).log10() - a) / (b - a) * self.len
    }

    /// Decades between `lo` and `hi`.
    pub(super) fn ticks(&self) -> Vec<f64> {
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
pub(super) fn x_grid(out: &mut String, f: &Frame, x: &LogAxis, label: fn(f64) -> String) {
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

/// A microsecond axis label: `250 µs`, `1.5 ms`, `2 s`.
pub(super) fn micros_label(us: f64) -> String {
    match us {
        v if v >= 1e6 => format!("{} s", v / 1e6),
        v if v >= 1e3 => format!("{} ms", v / 1e3),
        v => format!("{v} µs"),
    }
}

/// A count axis label: `500`, `20k`, `1.5M`.
pub(super) fn count_label(v: f64) -> String {
    match v {
        v if v >= 1e6 => format!("{}M", v / 1e6),
        v if v >= 1e3 => format!("{}k", v / 1e3),
        v => format!("{v}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
