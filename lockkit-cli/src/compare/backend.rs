//! One backend's part of `compare`: the conformance check, the benchmarks and the
//! fault probes, one after the other.

use std::time::{SystemTime, UNIX_EPOCH};

use lockkit::{LockError, redact_url};

use super::{Args, BackendReport};
use crate::bench;
use crate::probe;
use crate::progress::Bars;

/// Runs everything on one backend; stops at the first error (recorded, not returned).
pub(super) async fn backend(url: &str, args: &Args, bars: Bars) -> BackendReport {
    let mut report = BackendReport {
        label: String::new(),
        url: redact_url(url),
        driver: None,
        error: None,
        check: None,
        bench: None,
        probes: Vec::new(),
    };
    let result: Result<(), LockError> = async {
        if !args.no_check {
            let check = crate::check::conformance(url, args.filter.clone(), bars).await?;
            report.driver = Some(check.driver.clone());
            report.check = Some(check);
        }
        let bench = bench::measure(url, &args.settings, bars).await?;
        report.driver = Some(bench.driver.clone());
        report.bench = Some(bench);
        let bar = bars.bar(2, "fault probes");
        let run = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let stalled = crate::scratch::key(&format!("compare-{run}/stalled"));
        let killed = crate::scratch::key(&format!("compare-{run}/killed"));
        bar.set_message("stalled holder");
        let probes = async {
            report
                .probes
                .push(probe::stalled_holder(url, &stalled, args.lease).await?);
            bar.inc(1);
            bar.set_message("killed holder");
            report
                .probes
                .push(probe::killed_holder(url, &killed, args.lease).await?);
            Ok::<(), LockError>(())
        }
        .await;
        crate::scratch::purge(url, [stalled, killed]).await;
        probes?;
        bar.finish_and_clear();
        Ok(())
    }
    .await;
    if let Err(e) = result {
        crate::print_error(&format!("on {}", report.url), &e);
        report.error = Some(e.to_string());
    }
    report
}
