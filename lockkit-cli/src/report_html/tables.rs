//! The report's HTML tables: the backend legend, the side-by-side summary, the
//! conformance cases and the list of failures and skips.

use std::fmt::Write as _;

use lockkit_conformance::Outcome;

use super::esc;
use super::svg::color;
use crate::compare::{BackendReport, CompareReport};

/// One line per backend: its color swatch, label and URL.
pub(super) fn legend(out: &mut String, backends: &[BackendReport]) {
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

/// The side-by-side table of `compare`'s text report, one column per backend.
pub(super) fn summary_table(out: &mut String, report: &CompareReport) {
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

/// Every conformance case, one column per backend: pass, FAIL or skip (the reason
/// in the cell's title).
pub(super) fn cases_table(out: &mut String, backends: &[BackendReport]) {
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

/// The list of errors, failed cases and failed or skipped probes, if any.
pub(super) fn reasons(out: &mut String, backends: &[BackendReport]) {
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
