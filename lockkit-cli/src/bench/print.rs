//! `bench`'s tables on stdout (`--json` prints the same report as JSON instead).

use super::{BenchReport, Compared, Latency, Queue, Settings};

fn print_latency_row(name: &str, l: &Latency) {
    println!(
        "  {name:10} {:>8} {:>8} {:>8} {:>8} {:>10.0}",
        l.p50_us, l.p90_us, l.p99_us, l.max_us, l.ops_per_second
    );
}

fn print_queue(q: &Queue) {
    print_latency_row("handoff", &q.handoff);
    if let (Some(c), Some(all)) = (q.commands_per_handoff, q.all_commands_per_handoff) {
        println!(
            "  requests per hand-off: {c:.2} (server commands incl. inside scripts: {all:.1})"
        );
    }
    if let Some(p) = q.publishes_per_release {
        println!("  wake-ups (PUBLISH) per release: {p:.2}");
    }
    if let Some(p) = q.packets_per_release {
        println!("  packets the server received per release (mntr): {p:.1}");
    }
}

fn print_throughput(label: &str, c: &Compared) {
    let l = &c.lockkit;
    print!(
        "  {label:10} lockkit {:>9.0} grants/s ({} clients, {} keys)",
        l.grants_per_second, l.clients, l.keys
    );
    match (&c.floor, c.ratio_lockkit_over_floor) {
        (Some(f), Some(r)) => println!(
            ", floor {:.0} grants/s of {:.0} attempts/s, lockkit/floor = {r:.2}",
            f.grants_per_second,
            f.attempts as f64 / f.seconds.max(1e-9)
        ),
        _ => println!(),
    }
}

pub(super) fn report(report: &BenchReport, settings: &Settings) {
    println!(
        "{} ({}): uncontended lock+release, {} iterations",
        report.backend, report.driver, report.iterations
    );
    println!(
        "  {:10} {:>8} {:>8} {:>8} {:>8} {:>10}",
        "", "p50 µs", "p90 µs", "p99 µs", "max µs", "ops/s"
    );
    print_latency_row("lockkit", &report.lockkit);
    if let Some(f) = &report.floor {
        print_latency_row("floor", f);
    }
    println!("  floor: {}", report.floor_description);
    if let Some(r) = report.p50_ratio_lockkit_over_floor {
        println!("  p50 lockkit/floor = {r:.2}");
    }
    if let Some(h) = &report.handoff {
        println!(
            "contended hand-off (release → grant on another connection, {} times)",
            settings.handoffs
        );
        print_latency_row("handoff", h);
    }
    if let Some(q) = &report.queue {
        println!("queue of {} waiters, each on its own connection", q.waiters);
        print_queue(q);
    }
    for m in &report.modes {
        let label = m.mode.label(settings.limit);
        println!("{label}: uncontended acquire+release, in the same rounds");
        print_latency_row("lockkit", &m.lockkit);
        if let Some(r) = m.p50_ratio_lockkit_over_floor {
            println!("  p50 {label}/floor = {r:.2} (the floor's raw lock commands)");
        }
        if let Some(q) = &m.queue {
            println!(
                "{label}: queue of {} waiters behind {} holders, each on its own connection",
                q.waiters, settings.limit
            );
            print_queue(q);
        }
    }
    if report.contended.is_some() || report.many_keys.is_some() {
        println!(
            "throughput over {} (floor: clients spin on the raw commands)",
            lockkit_core::human_duration(settings.duration)
        );
    }
    if let Some(c) = &report.contended {
        print_throughput("one key", c);
    }
    if let Some(c) = &report.many_keys {
        print_throughput("many keys", c);
    }
}
