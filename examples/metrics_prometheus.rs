//! lockkit's metrics in Prometheus' text format, through `metrics-exporter-prometheus`
//! (the `metrics` feature).
//!
//! Eight workers take turns on the stock of two products, a reader checks a
//! report, and one worker tries a lock that is held; then the example prints what a
//! Prometheus scrape would read: wait and hold times, grants, contention and the
//! held-locks gauge, labelled by backend, mode and key group (`inventory`,
//! `report`: never the key itself).
//!
//! On embedded SQLite (no server), or on the backend `LOCKKIT_URL` names:
//!
//! ```text
//! cargo run --example metrics_prometheus --features metrics
//! ```

#![allow(clippy::print_stdout)] // An example prints what it does.

use std::time::Duration;

use lockkit::LockError;
use metrics_exporter_prometheus::PrometheusBuilder;
use tokio::task::JoinSet;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let recorder = PrometheusBuilder::new()
        .set_buckets(&[0.001, 0.005, 0.025, 0.1, 0.5, 2.5])?
        .build_recorder();
    let scrape = recorder.handle();
    metrics::set_global_recorder(recorder)?;
    lockkit::metrics::describe();

    let scratch = tempfile::tempdir()?;
    let url = std::env::var("LOCKKIT_URL")
        .unwrap_or_else(|_| format!("sqlite://{}", scratch.path().join("locks.db").display()));
    let locker = lockkit::connect(&url).await?.with_metrics_group(|key| {
        // `inventory:sku-1` is in the group `inventory`.
        key.as_str().split(':').next().unwrap_or("other").to_owned()
    });

    let mut workers = JoinSet::new();
    for worker in 0..8 {
        let locker = locker.clone();
        workers.spawn(async move {
            let sku = format!("inventory:sku-{}", worker % 2);
            let guard = locker.lock(sku).wait(Duration::from_secs(10)).await?;
            tokio::time::sleep(Duration::from_millis(5)).await; // deduct the stock
            guard.release().await
        });
    }
    while let Some(done) = workers.join_next().await {
        done??;
    }
    let report = locker.read_lock("report:daily").await?;
    let held = locker.lock("inventory:sku-0").await?;
    match locker.try_lock("inventory:sku-0").await {
        Err(LockError::Contended { .. }) => {}
        other => return Err(format!("a second holder of sku-0: {other:?}").into()),
    }

    // What a scrape reads while the report and sku-0 are held.
    let text = scrape.render();
    for line in text.lines().filter(|l| !l.contains("_bucket{")) {
        println!("{line}");
    }
    held.release().await?;
    report.release().await?;
    Ok(())
}
