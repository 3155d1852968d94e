//! BENCHMARKS.md: the figures of one run, their ratios and the targets they meet.

use std::fmt::Write;
use std::time::Duration;

use crate::Args;
use crate::backend::Backend;

/// Target: lockkit's uncontended p50 at most this many times the floor's.
const FLOOR_TARGET: f64 = 1.2;
/// Target: lockkit's hand-off p50 at most this many round trips, where waiters are
/// notified.
const ROUND_TRIP_TARGET: f64 = 3.0;

/// Percentiles (nearest rank) and rate of a set of timings.
#[derive(Debug, Clone)]
pub(crate) struct Stats {
    pub(crate) samples: usize,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    /// Timed operations per second of their summed time.
    pub(crate) per_second: f64,
}

impl Stats {
    pub(crate) fn from_ns(ns: &[u64]) -> Self {
        let mut s = ns.to_vec();
        s.sort_unstable();
        let pct = |q: f64| {
            let rank = (q * s.len() as f64).ceil() as usize;
            s.get(rank.clamp(1, s.len().max(1)) - 1)
                .copied()
                .unwrap_or(0) as f64
                / 1000.0
        };
        let total: u64 = s.iter().sum();
        Self {
            samples: s.len(),
            p50_us: pct(0.5),
            p99_us: pct(0.99),
            per_second: s.len() as f64 / (total as f64 / 1e9).max(1e-9),
        }
    }
}

/// One waiter count's hand-offs.
#[derive(Debug, Clone)]
pub(crate) struct Measured {
    pub(crate) stats: Stats,
    pub(crate) commands_per_handoff: Option<f64>,
}

/// One library on one backend.
#[derive(Debug)]
pub(crate) struct Row {
    pub(crate) library: String,
    pub(crate) uncontended: Result<Stats, String>,
    pub(crate) handoffs: Vec<(u64, Result<Measured, String>)>,
}

impl Row {
    pub(crate) fn new(library: &str) -> Self {
        Self {
            library: library.to_owned(),
            uncontended: Err("not run".into()),
            handoffs: Vec::new(),
        }
    }

    pub(crate) fn failures(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .uncontended
            .as_ref()
            .err()
            .cloned()
            .into_iter()
            .collect();
        for (waiters, h) in &self.handoffs {
            if let Err(e) = h {
                out.push(format!("{waiters} waiters: {e}"));
            }
        }
        out
    }

    fn handoff(&self, waiters: u64) -> Option<&Measured> {
        self.handoffs
            .iter()
            .find(|(w, _)| *w == waiters)
            .and_then(|(_, h)| h.as_ref().ok())
    }
}

/// The raw floor and lockkit, measured alternating pair by pair by `lockkit bench`.
#[derive(Debug)]
pub(crate) struct Floor {
    pub(crate) stats: Stats,
    /// lockkit in the same process, alternating with the floor.
    pub(crate) lockkit: Stats,
    pub(crate) description: String,
}

/// One backend's results.
#[derive(Debug)]
pub(crate) struct Group {
    pub(crate) title: &'static str,
    pub(crate) backend: Backend,
    pub(crate) server: String,
    pub(crate) round_trip: Option<Duration>,
    pub(crate) floor: Option<Floor>,
    pub(crate) rows: Vec<Row>,
    /// Libraries that could not run here, and why.
    pub(crate) skipped: Vec<String>,
    pub(crate) failures: Vec<String>,
}

impl Group {
    pub(crate) fn new(title: &'static str, backend: Backend, server: String) -> Self {
        Self {
            title,
            backend,
            server,
            round_trip: None,
            floor: None,
            rows: Vec::new(),
            skipped: Vec::new(),
            failures: Vec::new(),
        }
    }

    fn lockkit(&self) -> Option<&Row> {
        self.rows.iter().find(|r| r.library == "lockkit")
    }
}

/// Where and when the run happened.
#[derive(Debug)]
pub(crate) struct Machine {
    date: String,
    cpu: String,
    memory: String,
    kernel: String,
    command: String,
}

impl Machine {
    pub(crate) fn describe(command: &str) -> Self {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name")?.split(':').nth(1))
            .unwrap_or("unknown CPU")
            .trim()
            .to_owned();
        let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
        let memory = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or("unknown".to_owned(), |kb| {
                format!("{:.1} GiB", kb as f64 / 1048576.0)
            });
        let date = std::process::Command::new("date")
            .args(["-u", "+%Y-%m-%d %H:%M UTC"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        Self {
            date,
            cpu: format!("{cores} cores, {model}"),
            memory,
            kernel: read("/proc/sys/kernel/osrelease").trim().to_owned(),
            command: command.to_owned(),
        }
    }
}

fn us(v: f64) -> String {
    if v >= 10_000_000.0 {
        format!("{:.1} s", v / 1e6)
    } else if v >= 10_000.0 {
        format!("{:.1} ms", v / 1000.0)
    } else {
        format!("{v:.0} µs")
    }
}

fn ratio(a: f64, b: f64) -> String {
    format!("{:.2}", a / b.max(1e-9))
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "**missed**" }
}

/// The targets of one group, one line each.
fn targets(g: &Group, waiters: &[u64]) -> Vec<String> {
    let mut out = Vec::new();
    let Some(lk) = g.lockkit() else {
        return out;
    };
    if let Some(f) = &g.floor {
        let r = f.lockkit.p50_us / f.stats.p50_us;
        out.push(format!(
            "uncontended p50 ≤ {FLOOR_TARGET}× the floor: {r:.2}× — {}",
            verdict(r <= FLOOR_TARGET)
        ));
    }
    // Every backend here notifies lockkit's waiters (Redis and Redlock by pub/sub,
    // etcd and ZooKeeper by watches).
    if let Some(rtt) = g.round_trip {
        let rtt_us = rtt.as_secs_f64() * 1e6;
        for &w in waiters {
            if let Some(h) = lk.handoff(w) {
                let r = h.stats.p50_us / rtt_us;
                out.push(format!(
                    "hand-off p50 ≤ {ROUND_TRIP_TARGET}× one round trip ({}), {w} waiters: \
                     {r:.1}× — {}",
                    us(rtt_us),
                    verdict(r <= ROUND_TRIP_TARGET)
                ));
            }
        }
    }
    for peer in g.rows.iter().filter(|r| r.library != "lockkit") {
        let (mut misses, mut compared) = (Vec::new(), 0);
        if let (Ok(l), Ok(p)) = (&lk.uncontended, &peer.uncontended) {
            compared += 1;
            if l.per_second < p.per_second {
                misses.push(format!(
                    "uncontended rate {}",
                    ratio(l.per_second, p.per_second)
                ));
            }
        }
        for &w in waiters {
            if let (Some(l), Some(p)) = (lk.handoff(w), peer.handoff(w)) {
                compared += 1;
                if l.stats.p50_us > p.stats.p50_us {
                    misses.push(format!(
                        "{w}-waiter p50 {}",
                        ratio(l.stats.p50_us, p.stats.p50_us)
                    ));
                }
                if l.stats.p99_us > p.stats.p99_us {
                    misses.push(format!(
                        "{w}-waiter p99 {}",
                        ratio(l.stats.p99_us, p.stats.p99_us)
                    ));
                }
            }
        }
        out.push(if compared == 0 {
            format!("{}: no figures to compare with", peer.library)
        } else if misses.is_empty() {
            format!(
                "at least as fast as {} on every row where both have figures — met",
                peer.library
            )
        } else {
            format!(
                "at least as fast as {}: **missed** on {}",
                peer.library,
                misses.join(", ")
            )
        });
    }
    out
}

fn uncontended_line(md: &mut String, name: &str, s: &Stats, lockkit: Option<&Stats>) {
    let (r50, rate) = lockkit.map_or(("–".into(), "–".into()), |l| {
        (ratio(l.p50_us, s.p50_us), ratio(l.per_second, s.per_second))
    });
    let _ = writeln!(
        md,
        "| {name} | {} | {} | {:.0} | {r50} | {rate} |",
        us(s.p50_us),
        us(s.p99_us),
        s.per_second
    );
}

fn uncontended_table(md: &mut String, g: &Group) {
    let lk = g.lockkit().and_then(|r| r.uncontended.as_ref().ok());
    let _ = writeln!(
        md,
        "| uncontended | p50 | p99 | pairs/s | lockkit p50 ÷ this | lockkit pairs/s ÷ this |\n|---|---|---|---|---|---|"
    );
    if let Some(f) = &g.floor {
        let with = Some(&f.lockkit);
        uncontended_line(md, "raw floor *", &f.stats, with);
        uncontended_line(
            md,
            "lockkit, alternating with the floor *",
            &f.lockkit,
            with,
        );
    }
    for row in &g.rows {
        match &row.uncontended {
            Ok(s) => uncontended_line(md, &row.library, s, lk),
            Err(e) => {
                let _ = writeln!(md, "| {} | failed: {e} | | | | |", row.library);
            }
        }
    }
}

fn handoff_table(md: &mut String, g: &Group, waiters: &[u64]) {
    let lk = g.lockkit();
    let _ = writeln!(
        md,
        "\n| hand-off | waiters | p50 | p99 | hand-offs | commands per hand-off | lockkit p50 ÷ this | lockkit p99 ÷ this |\n|---|---|---|---|---|---|---|---|"
    );
    for row in &g.rows {
        for &w in waiters {
            let Some((_, h)) = row.handoffs.iter().find(|(x, _)| *x == w) else {
                continue;
            };
            match h {
                Ok(h) => {
                    let (r50, r99) =
                        lk.and_then(|l| l.handoff(w))
                            .map_or(("–".into(), "–".into()), |l| {
                                (
                                    ratio(l.stats.p50_us, h.stats.p50_us),
                                    ratio(l.stats.p99_us, h.stats.p99_us),
                                )
                            });
                    let commands = h
                        .commands_per_handoff
                        .map_or("–".into(), |c| format!("{c:.1}"));
                    let _ = writeln!(
                        md,
                        "| {} | {w} | {} | {} | {} | {commands} | {r50} | {r99} |",
                        row.library,
                        us(h.stats.p50_us),
                        us(h.stats.p99_us),
                        h.stats.samples
                    );
                }
                Err(e) => {
                    let _ = writeln!(md, "| {} | {w} | failed: {e} | | | | | |", row.library);
                }
            }
        }
    }
}

/// The whole report.
pub(crate) fn render(m: &Machine, args: &Args, groups: &[Group], consul: Option<&str>) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# Benchmarks: lockkit against its peers and the raw floor\n\n\
         Generated by `{}` on {} — {}, {} RAM, Linux {}. Release build; every server is a \
         throwaway testkit server on 127.0.0.1, shared by every library of its section in \
         the same run. Do not edit by hand: run the command again.\n",
        m.command, m.date, m.cpu, m.memory, m.kernel
    );
    let _ = writeln!(
        md,
        "How it measures (details in bench/peers/README.md):\n\n\
         - **uncontended**: one client, one key, {} acquire+release pairs each timed, after \
         200 warm-up pairs. pairs/s = pairs ÷ their summed time. Every library (lockkit \
         too) runs as a process of its own, in {} turns taken in rotation, so drift in \
         the machine's load hits them alike. The raw floor is compared with lockkit \
         inside one `lockkit bench` process, alternating pair by pair.\n\
         - **hand-off**: rounds of one holder and N waiters, each on its own connection. \
         The waiters queue, the holder releases, each waiter releases as soon as it \
         holds. A hand-off is the time from one release returning to the next acquire \
         returning: {} per queue length (rounds of N).\n\
         - **commands per hand-off**: the backend's own request counter, read before and \
         after each round; it includes each waiter's queuing, waiting (polls, watches), \
         grant and release, and the holder's release.\n\
         - **ratios**: lockkit ÷ the other, so below 1 means lockkit takes less time (p50, \
         p99) and above 1 means lockkit completes more pairs per second.\n\
         - Each library is used as its documentation shows, with its defaults.\n",
        args.iterations,
        crate::UNCONTENDED_CHUNKS,
        args.handoffs
    );
    for g in groups {
        let _ = writeln!(md, "## {}\n\nServer: {}.", g.title, g.server);
        if let Some(rtt) = g.round_trip {
            let _ = writeln!(
                md,
                "One round trip (p50 of the cheapest request on one connection, the lower of \
                 the measurements before and after the libraries ran): {}.",
                us(rtt.as_secs_f64() * 1e6)
            );
        }
        let _ = writeln!(md, "Commands counted: {}.", g.backend.counted());
        if let Some(f) = &g.floor {
            let _ = writeln!(
                md,
                "Raw floor: {}. \\* The floor and lockkit alternate pair by pair in one \
                 `lockkit bench` process; their ratios are to each other. Every other row \
                 is a process of its own, the libraries taking turns.",
                f.description
            );
        } else {
            let _ = writeln!(md, "Raw floor: none for this backend.");
        }
        let _ = writeln!(md, "\n**Targets**\n");
        for t in targets(g, &args.waiters) {
            let _ = writeln!(md, "- {t}");
        }
        md.push('\n');
        uncontended_table(&mut md, g);
        handoff_table(&mut md, g, &args.waiters);
        for reason in &g.skipped {
            let _ = writeln!(md, "\n- {reason}");
        }
        md.push('\n');
    }
    if let Some(c) = consul {
        let _ = writeln!(
            md,
            "## Consul (smoke test only)\n\nAgainst the testkit's in-process Consul stand-in, \
             not a Consul agent (none can be installed here), so no figure is reported: \
             `lockkit bench` {c}.\n"
        );
    }
    md
}
