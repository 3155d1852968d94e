//! `lockkit compare` over SQLite and every networked driver, against servers the
//! testkit starts (Consul: the testkit's stand-in), as a user would run it; the
//! HTML report is opened in headless Chromium and its screenshot checked.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use lockkit_testkit::{ConsulStandIn, Etcd, MariaDb, Postgres, Redis, StandInOptions, ZooKeeper};
use serde_json::Value;

/// The colors the report draws backends 0, 1, 2… in (`report_html::PALETTE`).
const PALETTE: [[u8; 3]; 7] = [
    [0x1f, 0x77, 0xb4],
    [0xff, 0x7f, 0x0e],
    [0x2c, 0xa0, 0x2c],
    [0xd6, 0x27, 0x28],
    [0x94, 0x67, 0xbd],
    [0x8c, 0x56, 0x4b],
    [0xe3, 0x77, 0xc2],
];

const ACL_TOKEN: &str = "c0ffee-acl-token-never-shown";

/// The conformance cases `compare` runs here (`--filter`): mandatory and optional
/// ones, so each backend shows passes and skips. Every case runs in each driver's
/// own conformance suite; this test proves `compare` itself.
const CASES: &str = "mutual_exclusion,try_lock_fails_fast,fencing_tokens,invalid_,readers_share,\
                     inspection_shows,the_leader_is_shown";

async fn lockkit(args: &[String]) -> (i32, String, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_lockkit"))
        .args(args)
        .env_remove("LOCKKIT_URL")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Renders `html` in headless Chromium into `png` (1000×2400 CSS pixels). Nothing
/// leaves the machine: the page is a local file with nothing to fetch, and every
/// host name resolves to nothing.
fn screenshot(html: &Path, png: &Path) {
    let profile = tempfile::tempdir().unwrap();
    let chromium = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            std::process::Command::new(c)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .unwrap_or_else(|| panic!("no chromium on PATH; ci/setup installs Debian's `chromium`"));
    let mut child = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--no-first-run",
            "--no-default-browser-check",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            "--window-size=1000,2400",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", html.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Bounded: Chromium renders a local page in a few seconds.
    for _ in 0..600 {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "chromium exited with {status}");
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("chromium did not finish the screenshot within 60 s");
}

/// Pixels of the screenshot per palette color (within ±3 per channel), and the
/// share of pixels that are not white.
fn pixel_counts(png: &Path) -> (Vec<usize>, f64) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert!(
        channels >= 3,
        "unexpected PNG color type {:?}",
        info.color_type
    );
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let mut counts = vec![0; PALETTE.len()];
    let (mut inked, mut total) = (0usize, 0usize);
    for px in buf[..info.buffer_size()].chunks_exact(channels) {
        total += 1;
        if px[..3] != [255, 255, 255] {
            inked += 1;
        }
        for (count, c) in counts.iter_mut().zip(PALETTE) {
            if px[..3].iter().zip(c).all(|(a, b)| a.abs_diff(b) <= 3) {
                *count += 1;
            }
        }
    }
    (counts, inked as f64 / total as f64)
}

/// The Consul driver's session TTL in this test, ms: its locks' lease.
const CONSUL_SESSION_TTL_MS: u64 = 600;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_runs_check_bench_and_probes_on_sqlite_and_every_networked_backend() {
    let (pg, my, redis, etcd, zk, consul) = tokio::try_join!(
        Postgres::start(),
        MariaDb::start(),
        Redis::start(),
        Etcd::start(),
        ZooKeeper::start(),
        ConsulStandIn::start_with(
            StandInOptions::default()
                .with_acl_token(ACL_TOKEN)
                .with_min_session_ttl(Duration::from_millis(100)),
        ),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (html, json) = (
        dir.path().join("report.html"),
        dir.path().join("report.json"),
    );
    let consul_url = consul
        .url()
        .replacen("consul://", &format!("consul://{ACL_TOKEN}@"), 1);
    let urls = [
        format!("sqlite://{}", dir.path().join("locks.db").display()),
        pg.url(),
        my.url(),
        redis.url(),
        etcd.url(),
        // Sessions as the drivers' own conformance tests use them: 1 s, 600 ms.
        format!("{}?session_timeout_ms=1000", zk.url()),
        format!("{consul_url}?session_ttl_ms={CONSUL_SESSION_TTL_MS}&lock_delay_ms=0"),
    ];
    let drivers = [
        "sqlite", "postgres", "mysql", "redis", "etcd", "zk", "consul",
    ];
    let mut args: Vec<String> = vec!["compare".into()];
    args.extend(urls.iter().cloned());
    for a in [
        "--iterations",
        "200",
        "--handoffs",
        "20",
        "--clients",
        "4",
        "--keys",
        "40",
        "--duration",
        "500ms",
        "--lease",
        "1s",
        "--filter",
        CASES,
    ] {
        args.push(a.into());
    }
    args.extend(["--html".into(), html.display().to_string()]);
    args.extend(["--json".into(), json.display().to_string()]);
    let (code, stdout, stderr) = lockkit(&args).await;
    assert_eq!(code, 0, "stdout:\n{stdout}\nstderr:\n{stderr}");
    eprintln!("{stdout}");

    // The terminal table: one column per backend, a row per figure.
    let header = stdout.lines().next().unwrap();
    for d in drivers {
        assert!(header.contains(d), "no column for {d}:\n{stdout}");
    }
    for row in [
        "conformance pass/fail/skip",
        "lock+release p50",
        "p50 lockkit/floor",
        "hand-off p99",
        "one key grants/s",
        "many keys grants/s",
        "stalled holder: freed after",
        "stale write rejected",
        "killed holder: freed after",
    ] {
        assert!(stdout.contains(row), "no row `{row}`:\n{stdout}");
    }

    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let backends = report["backends"].as_array().unwrap();
    assert_eq!(backends.len(), urls.len(), "{report}");
    for (b, driver) in backends.iter().zip(drivers) {
        let ctx = format!("{driver}: {b}");
        assert_eq!(b["driver"], driver, "{ctx}");
        assert!(b["error"].is_null(), "{ctx}");
        // Conformance: nothing failed, and the cases asked for ran.
        let cases = b["check"]["cases"].as_array().unwrap();
        let asked = lockkit_conformance::CASES
            .iter()
            .filter(|c| lockkit_conformance::matches_filter(c.name, Some(CASES)))
            .count();
        assert_eq!(cases.len(), asked, "{ctx}");
        assert!(
            cases.iter().all(|c| c["outcome"]["status"] != "failed"),
            "{ctx}"
        );
        let passed = cases
            .iter()
            .filter(|c| c["outcome"]["status"] == "passed")
            .count();
        assert!(passed >= 5, "only {passed} cases passed: {ctx}");
        // Bench: lockkit and the floor, side by side.
        let bench = &b["bench"];
        for l in [&bench["lockkit"], &bench["floor"], &bench["handoff"]] {
            assert!(l["p50_us"].as_u64().is_some_and(|p| p >= 1), "{ctx}");
        }
        for run in ["contended", "many_keys"] {
            assert!(
                bench[run]["lockkit"]["grants"].as_u64().unwrap() >= 1,
                "{ctx}"
            );
            assert!(
                bench[run]["floor"]["grants"].as_u64().unwrap() >= 1,
                "{ctx}"
            );
        }
        // Probes: both passed; the waiter came after the stalled holder's lease could
        // have run out (the watchdog renews every third of the lease), never before,
        // with a greater token; the stale write was refused; the holder was told.
        // Consul's lease is its session's TTL, not `--lease`: a stalled holder's
        // session lapses, and frees the lock, that long after its last renewal.
        let lease_ms = if driver == "consul" {
            CONSUL_SESSION_TTL_MS
        } else {
            1000
        };
        let probes = b["probes"].as_array().unwrap();
        assert_eq!(probes.len(), 2, "{ctx}");
        for p in probes {
            assert_eq!(p["outcome"]["status"], "passed", "{ctx}");
            assert!(
                p["waiter_token"].as_u64() > p["holder_token"].as_u64(),
                "{ctx}"
            );
        }
        let stalled = &probes[0];
        assert_eq!(stalled["name"], "stalled_holder", "{ctx}");
        assert!(
            stalled["freed_after_ms"].as_u64().unwrap() >= lease_ms * 2 / 3 - 50,
            "{ctx}"
        );
        assert_eq!(stalled["stale_write_rejected"], true, "{ctx}");
        assert!(stalled["holder_told_lost_after_ms"].is_u64(), "{ctx}");
        assert_eq!(probes[1]["name"], "killed_holder", "{ctx}");
    }

    // No secret in any output.
    let html_text = std::fs::read_to_string(&html).unwrap();
    for (what, text) in [
        ("stdout", &stdout),
        ("stderr", &stderr),
        ("HTML", &html_text),
    ] {
        assert!(!text.contains(ACL_TOKEN), "the ACL token is in the {what}");
    }
    assert!(!std::fs::read_to_string(&json).unwrap().contains(ACL_TOKEN));
    // Self-contained: nothing to fetch.
    for reference in ["src=", "href=", "<script", "@import", "url("] {
        assert!(
            !html_text.contains(reference),
            "the report refers out: {reference}"
        );
    }

    // The report as a browser shows it: every backend's color is drawn in plots
    // (a legend swatch alone is 144 pixels), and the page is not blank.
    let png = dir.path().join("report.png");
    screenshot(&html, &png);
    if let Ok(keep) = std::env::var("LOCKKIT_KEEP_REPORT") {
        // To look at the report by hand: LOCKKIT_KEEP_REPORT=/some/dir.
        for f in ["report.html", "report.json", "report.png"] {
            std::fs::copy(dir.path().join(f), Path::new(&keep).join(f)).unwrap();
        }
    }
    let (counts, inked) = pixel_counts(&png);
    eprintln!("pixels per backend color: {counts:?}; non-white share {inked:.3}");
    for (count, driver) in counts.iter().zip(drivers) {
        assert!(
            *count >= 1000,
            "{driver}'s plots are missing from the screenshot: {counts:?}"
        );
    }
    assert!(
        inked > 0.05,
        "the screenshot is nearly blank ({inked:.3} non-white)"
    );
}

#[tokio::test]
async fn compare_reports_an_unreachable_backend_and_still_writes_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let (html, json) = (dir.path().join("r.html"), dir.path().join("r.json"));
    let args: Vec<String> = [
        "compare",
        "mem://",
        "redis://127.0.0.1:1",
        "--no-check",
        "--iterations",
        "20",
        "--handoffs",
        "2",
        "--duration",
        "100ms",
    ]
    .into_iter()
    .map(String::from)
    .chain(["--html".into(), html.display().to_string()])
    .chain(["--json".into(), json.display().to_string()])
    .collect();
    let (code, stdout, stderr) = lockkit(&args).await;
    assert_eq!(code, 1, "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stderr.contains("on redis://127.0.0.1:1"), "{stderr}");
    assert!(
        stderr.contains("hint: check that the server is running"),
        "{stderr}"
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(report["backends"][0]["error"].is_null(), "{report}");
    assert!(
        report["backends"][0]["bench"]["lockkit"]["p50_us"].is_u64(),
        "{report}"
    );
    // mem:// holds are process-local: the probes say so instead of failing.
    assert_eq!(
        report["backends"][0]["probes"][0]["outcome"]["status"],
        "skipped"
    );
    assert!(
        report["backends"][1]["error"]
            .as_str()
            .unwrap()
            .contains("redis"),
        "{report}"
    );
    assert!(std::fs::read_to_string(&html).unwrap().contains("error"));
}
