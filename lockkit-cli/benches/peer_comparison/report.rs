//! BENCHMARKS.md: the figures of one run, their ratios and the targets they meet.

use std::fmt::Write;
use std::time::Duration;

use crate::Args;
use crate::machine::Machine;
use crate::measure::CONTROL;
use crate::paired::Paired;
use crate::results::{Group, Stats};
use crate::targets::targets;

pub(crate) fn us(v: f64) -> String {
    if v >= 10_000_000.0 {
        format!("{:.1} s", v / 1e6)
    } else if v >= 10_000.0 {
        format!("{:.1} ms", v / 1000.0)
    } else {
        format!("{v:.0} µs")
    }
}

/// `a ÷ b`, or "—" when `b` is under 1 (µs: nothing to divide by).
pub(crate) fn ratio(a: f64, b: f64) -> String {
    if b < 1.0 {
        return "—".to_owned();
    }
    format!("{:.2}", a / b)
}

/// One uncontended row; `cpu`: the servers' CPU time per pair, where measured.
fn uncontended_line(
    md: &mut String,
    name: &str,
    s: &Stats,
    cpu: Option<Duration>,
    r50: String,
    rate: String,
) {
    let cpu = cpu.map_or("–".into(), |c| us(c.as_secs_f64() * 1e6));
    let _ = writeln!(
        md,
        "| {name} | {} | {} | {:.0} | {cpu} | {r50} | {rate} |",
        us(s.p50_us),
        us(s.p99_us),
        s.per_second
    );
}

/// A paired ratio with its 95% interval.
fn paired_cell(p: Option<Paired>) -> String {
    p.map_or("–".into(), |p| {
        format!("{:.2} ({:.2}–{:.2})", p.median, p.low, p.high)
    })
}

fn uncontended_table(md: &mut String, g: &Group) {
    let lk = g
        .lockkit()
        .and_then(|r| r.uncontended.as_ref().ok())
        .map(|u| &u.stats);
    let _ = writeln!(
        md,
        "| uncontended | p50 | p99 | pairs/s | server CPU per pair | lockkit p50 ÷ this | lockkit pairs/s ÷ this, paired by round (95% interval) |\n|---|---|---|---|---|---|---|"
    );
    if let Some(f) = &g.floor {
        let r =
            |a: &Stats, b: &Stats| (ratio(a.p50_us, b.p50_us), ratio(a.per_second, b.per_second));
        let (r50, rate) = r(&f.lockkit, &f.stats);
        uncontended_line(md, "raw floor *", &f.stats, None, r50, rate);
        uncontended_line(
            md,
            "lockkit, alternating with the floor *",
            &f.lockkit,
            None,
            "1.00".into(),
            "1.00".into(),
        );
    }
    let p50 = |s: &Stats| lk.map_or("–".into(), |l| ratio(l.p50_us, s.p50_us));
    for row in &g.rows {
        match &row.uncontended {
            Ok(u) => {
                let rate = if row.library == "lockkit" {
                    "1.00".into()
                } else {
                    paired_cell(g.paired_with(row))
                };
                let cpu = u.server_cpu;
                uncontended_line(md, &row.library, &u.stats, cpu, p50(&u.stats), rate);
            }
            Err(e) => {
                let _ = writeln!(md, "| {} | failed: {e} | | | | | |", row.library);
            }
        }
    }
    match &g.control {
        Some(Ok(u)) => uncontended_line(
            md,
            CONTROL,
            &u.stats,
            u.server_cpu,
            p50(&u.stats),
            paired_cell(g.noise.map(|n| n.control)),
        ),
        Some(Err(e)) => {
            let _ = writeln!(md, "| {CONTROL} | failed: {e} | | | | | |");
        }
        None => {}
    }
}

fn handoff_table(md: &mut String, g: &Group, waiters: &[u64]) {
    let lk = g.lockkit();
    let _ = writeln!(
        md,
        "\n| hand-off | waiters | p50 | p99 | p50 from the release's start | hand-offs | commands per hand-off | server CPU per hand-off | lockkit p50 ÷ this | lockkit p99 ÷ this |\n|---|---|---|---|---|---|---|---|---|---|"
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
                    let cpu = h
                        .server_cpu_per_handoff
                        .map_or("–".into(), |c| us(c.as_secs_f64() * 1e6));
                    let from_start = h
                        .from_release_start
                        .as_ref()
                        .map_or("–".into(), |s| us(s.p50_us));
                    let _ = writeln!(
                        md,
                        "| {} | {w} | {} | {} | {from_start} | {} | {commands} | {cpu} | {r50} | {r99} |",
                        row.library,
                        us(h.stats.p50_us),
                        us(h.stats.p99_us),
                        h.stats.samples
                    );
                }
                Err(e) => {
                    let _ = writeln!(md, "| {} | {w} | failed: {e} | | | | | | | |", row.library);
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
         too) runs in one long-lived process of its own, and they take turns in rounds of \
         {} pairs each, the order rotating from round to round. *lockkit pairs/s ÷ this* \
         is paired: the median over rounds of the two batches' time ratio, with its 95% \
         bootstrap interval, so drift in the machine's speed, which lasts seconds, hits \
         both sides of each ratio alike. The raw floor is compared with lockkit inside \
         one `lockkit bench` process, alternating pair by pair.\n\
         - **server CPU per pair**: the CPU time the server's processes (every thread, \
         and PostgreSQL's backends) ran during a library's batches, from \
         `/proc/<pid>/task/*/schedstat`, divided by its pairs: what one pair costs the \
         server, which the round trips do not show. On Redlock it is the five masters' \
         sum, all on one CPU. It includes the server's own background work in that time.\n\
         - **control and noise band**: lockkit runs twice, in two processes, in the same \
         rounds (*{}*). Their paired ratio would be 1.00 on a quiet machine; the band \
         is the wider of its 95% interval and its distance from 1. A target met or \
         missed by less than the band is *tied*.\n\
         - **hand-off**: rounds of one holder and N waiters, each on its own connection. \
         The waiters queue, the holder releases, each waiter releases as soon as it \
         holds. A hand-off is the time from one release returning to the next acquire \
         returning: at least {} per queue length, in at least {} rounds of N, after {} \
         round of N not counted (it warms the connections up, as the pairs' warm-up \
         does). A grant that lands before the \
         release returns (a release that waits for more than the grant needs) reads as \
         0, so lockkit's and rslock's participants also time it from the release's start \
         (*p50 from the release's start*), which includes the release itself; lockkit's \
         target is judged so where a tenth or more of its hand-offs read 0.\n\
         - **hand-off in round trips**: the round trip drifts from second to second \
         more than the hand-offs do, so each round is bracketed by a block of {} of \
         the backend's cheapest requests just before its go and just after it ends, \
         and each hand-off is divided by the mean of the two blocks' p50s. The target's \
         figure is the median of those ratios, with its 95% interval bootstrapped over \
         rounds: *met* if the whole interval, widened by the noise band, is within the \
         target, *missed* if all of it is beyond, *tied* otherwise.\n\
         - **commands per hand-off**: the backend's own request counter, read before and \
         after each round; it includes each waiter's queuing, waiting (polls, watches), \
         grant and release, and the holder's release.\n\
         - **server CPU per hand-off**: the server's CPU time (as for the pairs) from \
         each round's go to its last release, divided by its hand-offs: each waiter's \
         queuing, the wake-ups (a herd would show here) and the holder's release \
         included.\n\
         - **ratios**: lockkit ÷ the other, so below 1 means lockkit takes less time (p50, \
         p99) and above 1 means lockkit completes more pairs per second.\n\
         - **placement**: every server runs on CPU 0 and every client (the runner, each \
         library's process, `lockkit bench`) on CPU 1 (`taskset`), so that no library \
         shares a core with the server by chance: unpinned, two processes of the same \
         library in the same rounds differed by up to 7%. Every message between client \
         and server crosses CPUs, as it would cross machines: on this machine that \
         makes a round trip 2–3× longer than with both on one CPU.\n\
         - **other primitives** (ZooKeeper: a semaphore of 4 permits, a read lock, a \
         write lock): uncontended pairs only, against the peers that have the primitive \
         (python-redis-lock, redis-py, rslock, pottery and python-etcd3 have no semaphore \
         and no read-write lock).\n\
         - **election failover**: the hand-off rounds again, where holding is leading and \
         releasing is resigning, behind 1 and 8 followers: from a leader's resignation \
         returning to the next candidate leading.\n\
         - **the watchdog's cost**: on Redis and Redlock, lockkit also runs with a fixed \
         lease and no watchdog (*{}*), uncontended, in the same rounds.\n\
         - **fencing** (Redis, Redlock): the floor is the raw fenced lock, the least a \
         lock that hands out fencing tokens sends, and lockkit is held to 1.1× it. rslock \
         hands out no token: it is shown, with its server CPU per pair, as the price of \
         fencing, not as a target.\n\
         - **fair requests** (Redis): lockkit's request made `.fair()` beside its default \
         one, uncontended and in the hand-off rounds; none of the peers here has a fair \
         lock.\n\
         - **two keys at once**: lockkit's `lock_all` of two keys; a pair takes and frees \
         both. On ZooKeeper beside Curator's `InterProcessMultiLock` of two mutexes; on \
         Redis and PostgreSQL, which take free keys in one request, beside the same two \
         keys taken as two locks one after the other (uncontended only).\n\
         - **a lock in your transaction** (PostgreSQL, MariaDB): a pair begins a \
         transaction, takes the key's lock in it (`TransactionLocks`) and commits; beside \
         it, lockkit's lease table's acquire and release, a reference for what the BEGIN \
         and COMMIT cost, not a target. Uncontended only.\n\
         - Each library is used as its documentation shows, with its defaults.\n",
        args.iterations,
        crate::rounds::BATCH,
        CONTROL,
        args.handoffs,
        crate::measure::MIN_ROUNDS,
        crate::program::WARM_UP_ROUNDS,
        crate::in_round_trips::BLOCK,
        crate::measure::LEASE
    );
    for g in groups {
        let _ = writeln!(md, "## {}\n\nServer: {}.", g.title, g.server);
        if let Some(rtt) = g.round_trip {
            let _ = writeln!(
                md,
                "One round trip (p50 of the cheapest request, on one connection per server, {}; the \
                 lower of the measurements before and after the libraries ran; the hand-off targets \
                 use the round trips measured around each round instead): {}.",
                g.backend.cheapest_request(),
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
        if let Some(n) = g.noise {
            let _ = writeln!(
                md,
                "Noise band of this run: ±{:.1}% (the control's paired ratio {:.3}, 95% \
                 interval {:.3}–{:.3}).",
                n.band * 100.0,
                n.control.median,
                n.control.low,
                n.control.high
            );
        }
        let _ = writeln!(md, "\n**Targets**\n");
        for t in targets(g, g.waiters(&args.waiters)) {
            let _ = writeln!(md, "- {t}");
        }
        md.push('\n');
        if g.handoffs_only.is_none() {
            uncontended_table(&mut md, g);
        }
        if !g.uncontended_only {
            handoff_table(&mut md, g, g.waiters(&args.waiters));
        }
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
