//! A [`LogCapture`] keeps the lines of its own test, wherever on its runtime they
//! are logged (the test's thread, a task a driver spawned, the blocking pool, a
//! `log` record), and none of a neighbour test running at the same time in the
//! same process, as under `cargo test`.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit_testkit::LogCapture;

#[test]
fn a_capture_keeps_its_runtimes_lines_and_no_neighbours() {
    let (mine, theirs) = (LogCapture::start(), LogCapture::start());
    let neighbour = {
        let theirs = theirs.clone();
        std::thread::spawn(move || {
            theirs.block_on(async {
                for _ in 0..20 {
                    tracing::warn!("a neighbour's line");
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            })
        })
    };
    mine.block_on(async {
        tracing::info!("on the test's thread");
        tokio::spawn(async { tracing::warn!("in a task spawned in the background") })
            .await
            .unwrap();
        tokio::task::spawn_blocking(|| log::warn!("a log record on the blocking pool"))
            .await
            .unwrap();
        tracing::debug!("below INFO");
        tokio::time::sleep(Duration::from_millis(50)).await;
    })
    .unwrap();
    std::thread::spawn(|| tracing::warn!("on a thread of no runtime"))
        .join()
        .unwrap();
    tracing::warn!("on the test's thread, after the runtime");
    neighbour.join().unwrap().unwrap();

    for own in [
        "on the test's thread",
        "in a task spawned in the background",
        "a log record on the blocking pool",
    ] {
        assert_eq!(mine.lines(own).len(), 1, "{own}: {}", mine.logged());
    }
    for other in [
        "a neighbour's line",
        "no runtime",
        "after the runtime",
        "below",
    ] {
        assert!(mine.lines(other).is_empty(), "{other}: {}", mine.logged());
    }
    assert_eq!(theirs.lines("a neighbour's line").len(), 20);
    assert!(theirs.lines("on the test's thread").is_empty());
}

#[test]
fn every_level_keeps_trace_lines() {
    let logs = LogCapture::every_level();
    logs.block_on(async { tracing::trace!("the finest line") })
        .unwrap();
    assert_eq!(logs.lines("the finest line").len(), 1, "{}", logs.logged());
}

/// A line whose callsite a thread that captures nothing reached first (a
/// neighbour test's) is still captured: `tracing` caches per callsite whether
/// it is wanted at all.
#[test]
fn a_line_first_reached_where_nothing_captures_is_still_captured() {
    fn warn() {
        tracing::warn!("first reached elsewhere");
    }
    let logs = LogCapture::start();
    std::thread::spawn(warn).join().unwrap();
    logs.block_on(async { tokio::spawn(async { warn() }).await.unwrap() })
        .unwrap();
    assert_eq!(logs.lines("first reached elsewhere").len(), 1);
}
