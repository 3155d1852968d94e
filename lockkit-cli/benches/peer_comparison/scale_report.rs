//! The scale section of the report, and its two charts.

use std::fmt::Write;

use crate::plot::{Chart, Series, line_chart};
use crate::scale::{Scale, TTL};

/// Where the charts go, beside the report.
pub(crate) const THROUGHPUT_SVG: &str = "bench/scale-throughput.svg";
pub(crate) const HOLDS_SVG: &str = "bench/scale-holds.svg";

/// The charts, as (path beside the report, SVG).
pub(crate) fn charts(scale: &Scale) -> Vec<(&'static str, String)> {
    let series = |name: &str, f: &dyn Fn(&crate::scale::Throughput) -> Option<f64>| Series {
        name: name.to_owned(),
        points: scale
            .throughput
            .iter()
            .filter_map(|t| Some((t.clients as f64, f(t)?)))
            .collect(),
    };
    let throughput = line_chart(
        &Chart {
            title: "Redis: lock+release throughput",
            x_label: "concurrent clients (log scale)",
            y_label: "grants per second",
        },
        &[
            series("lockkit, a key each", &|t| Some(t.distinct_keys)),
            series("raw floor, a key each", &|t| t.distinct_keys_floor),
            series("lockkit, one key", &|t| Some(t.one_key)),
            series("raw floor, one key", &|t| t.one_key_floor),
        ],
    );
    let holds = line_chart(
        &Chart {
            title: "Redis: one Locker holding N locks (watchdog on)",
            x_label: "held locks (log scale)",
            y_label: "per second, or MiB",
        },
        &[
            Series {
                name: "renewal requests/s".into(),
                points: scale
                    .holds
                    .iter()
                    .map(|h| (h.held as f64, h.requests_per_s))
                    .collect(),
            },
            Series {
                name: "resident MiB".into(),
                points: scale
                    .holds
                    .iter()
                    .map(|h| (h.held as f64, h.rss_kib as f64 / 1024.0))
                    .collect(),
            },
        ],
    );
    vec![(THROUGHPUT_SVG, throughput), (HOLDS_SVG, holds)]
}

/// The section: the tables, the charts, and how cost grows.
pub(crate) fn section(scale: &Scale) -> String {
    let mut md = String::from("## Scale: Redis, one server\n\n");
    md.push_str(
        "Throughput: `lockkit bench URL --clients N --keys N --duration 2s` for each N: \
         N clients, each a `Locker` on its own connection, lock and release for 2 s on one \
         shared key, then on a key each; the raw floor (SET NX PX + compare-and-delete, \
         a refused attempt retried at once) does the same with the same clients.\n\n",
    );
    md.push_str("| clients | a key each: lockkit grants/s | floor | one key: lockkit grants/s | floor |\n|---|---|---|---|---|\n");
    let rate = |v: Option<f64>| v.map_or("—".to_owned(), |v| format!("{v:.0}"));
    for t in &scale.throughput {
        let _ = writeln!(
            md,
            "| {} | {:.0} | {} | {:.0} | {} |",
            t.clients,
            t.distinct_keys,
            rate(t.distinct_keys_floor),
            t.one_key,
            rate(t.one_key_floor)
        );
    }
    let _ = writeln!(md, "\n![throughput by clients]({THROUGHPUT_SVG})\n");
    let _ = writeln!(
        md,
        "Held locks: one `Locker` takes N locks with a {} s lease (the watchdog renews each \
         every {} s, in batches), then the server's requests are counted for 6 s; memory is \
         the process's resident set grown by the acquiring.\n",
        TTL.as_secs(),
        TTL.as_secs() / 3
    );
    md.push_str("| held locks | resident memory grown | per lock | renewal requests/s | Redis commands/s | still held at the end |\n|---|---|---|---|---|---|\n");
    for h in &scale.holds {
        let _ = writeln!(
            md,
            "| {} | {:.1} MiB | {:.2} KiB | {:.1} | {:.0} | {} |",
            h.held,
            h.rss_kib as f64 / 1024.0,
            h.rss_kib as f64 / h.held.max(1) as f64,
            h.requests_per_s,
            h.commands_per_s,
            h.live
        );
    }
    let _ = writeln!(md, "\n![held locks]({HOLDS_SVG})\n");
    md.push_str(&growth(scale));
    for f in &scale.failures {
        let _ = writeln!(md, "- failed: {f}");
    }
    md
}

/// How cost grows, in words, from the figures.
fn growth(scale: &Scale) -> String {
    let mut out = String::from("**How cost grows.** ");
    let t = &scale.throughput;
    if let (Some(one), Some(most)) = (t.first(), t.last()) {
        let best = t
            .iter()
            .max_by(|a, b| a.distinct_keys.total_cmp(&b.distinct_keys))
            .unwrap_or(most);
        let of_floor: Vec<f64> = t
            .iter()
            .filter_map(|r| Some(r.distinct_keys / r.distinct_keys_floor?))
            .collect();
        let (flo, fhi) = of_floor
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &r| (a.min(r), b.max(r)));
        let _ = write!(
            out,
            "On a key each, throughput goes from {:.0} grants/s with one client, which waits \
             out its round trips, to at most {:.0} ({:.1}× it, at {} clients), and is {:.0} \
             at {} clients: past a few clients the server's one core is the limit, not the \
             number of clients or of locks held. lockkit keeps {:.0}–{:.0}% of the raw \
             floor's rate (whose lock is a bare SET NX, without a fencing token or a \
             queue). ",
            one.distinct_keys,
            best.distinct_keys,
            best.distinct_keys / one.distinct_keys,
            best.clients,
            most.distinct_keys,
            most.clients,
            100.0 * flo,
            100.0 * fhi,
        );
        if let Some(eight) = t.iter().find(|r| r.clients == 8) {
            let change = most.one_key / eight.one_key - 1.0;
            let moves = if change.abs() < 0.05 {
                "holds within 5%".to_owned()
            } else if change < 0.0 {
                format!("falls by {:.0}%", -100.0 * change)
            } else {
                format!("rises by {:.0}%", 100.0 * change)
            };
            let _ = write!(
                out,
                "On one key every grant is a hand-off: from 8 to {} clients it {moves} \
                 ({:.0} to {:.0} grants/s), as one release wakes one waiter however many wait, \
                 where the floor's spinning clients go from {} to {} grants/s. ",
                most.clients,
                eight.one_key,
                most.one_key,
                eight
                    .one_key_floor
                    .map_or("—".into(), |v| format!("{v:.0}")),
                most.one_key_floor.map_or("—".into(), |v| format!("{v:.0}")),
            );
        }
    }
    if let (Some(a), Some(b)) = (scale.holds.first(), scale.holds.last()) {
        let per = |h: &crate::scale::Holds| h.rss_kib as f64 / h.held.max(1) as f64;
        let _ = write!(
            out,
            "Held locks grow memory linearly, about {:.1} KiB each ({:.2} at {}, {:.2} at {}), \
             and renewal traffic linearly: each lock is renewed once per {} s, in batched \
             requests ({:.1} requests/s for {} locks, {:.1} for {}: {:.0} renewals per \
             request).",
            (per(a) + per(b)) / 2.0,
            per(a),
            a.held,
            per(b),
            b.held,
            TTL.as_secs() / 3,
            a.requests_per_s,
            a.held,
            b.requests_per_s,
            b.held,
            b.held as f64 / (TTL.as_secs_f64() / 3.0) / b.requests_per_s.max(1e-9),
        );
    }
    out.push('\n');
    out
}
