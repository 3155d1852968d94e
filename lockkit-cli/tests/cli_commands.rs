//! The `lockkit` binary, run as a user would.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::process::Command;

use serde_json::Value;

fn lockkit(args: &[&str]) -> (i32, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lockkit"))
        .args(args)
        .env_remove("LOCKKIT_URL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let json = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    (out.status.code().unwrap_or(-1), json, stderr)
}

/// `lockkit args…` with `LOCKKIT_LOG` set to `log` (or unset): exit code and stderr.
fn lockkit_logging(args: &[&str], log: Option<&str>) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockkit"));
    cmd.args(args)
        .env_remove("LOCKKIT_URL")
        .env_remove("LOCKKIT_LOG");
    if let Some(log) = log {
        cmd.env("LOCKKIT_LOG", log);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    (out.status.code().unwrap_or(-1), stderr)
}

/// A passing `check` is quiet: the warnings its cases cause on purpose (a hold
/// broken behind its holder's back, a session ended) are printed only when
/// `LOCKKIT_LOG` asks for them, or when the check fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passing_check_prints_no_warnings_unless_asked() {
    let pg = lockkit_testkit::Postgres::start().await.unwrap();
    let url = format!("{}?mode=advisory", pg.url());
    let (quiet, asked) = tokio::task::spawn_blocking(move || {
        let args = ["check", url.as_str(), "--json", "--filter", "lost"];
        (
            lockkit_logging(&args, None),
            lockkit_logging(&args, Some("warn")),
        )
    })
    .await
    .unwrap();
    assert_eq!(quiet.0, 0, "{}", quiet.1);
    assert_eq!(asked.0, 0, "{}", asked.1);
    assert!(
        quiet.1.trim().is_empty(),
        "a passing check printed: {}",
        quiet.1
    );
    assert!(
        asked.1.contains("WARN"),
        "LOCKKIT_LOG=warn showed no warning: {}",
        asked.1
    );
}

#[test]
fn demo_oversells_without_a_lock_and_never_with_lockkit() {
    let (code, r, err) = lockkit(&["demo", "--json", "--workers", "6", "--stock", "60"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.trim().is_empty(), "the demo printed on stderr: {err}");
    let without = &r["without_lock"];
    let with = &r["with_lockkit"];
    assert!(without["oversold"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(with["oversold"].as_u64(), Some(0), "{r}");
    assert_eq!(with["sold"].as_u64(), Some(60), "{r}");
    assert_eq!(with["final_stock"].as_i64(), Some(0), "{r}");
    assert!(with["stale_writes_rejected"].as_u64().unwrap() >= 1, "{r}");
}

#[test]
fn check_runs_every_case_against_sqlite_and_passes() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("l.db").display());
    let (code, r, err) = lockkit(&["check", &url, "--json"]);
    assert_eq!(code, 0, "{err}\n{r}");
    let cases = r["cases"].as_array().unwrap();
    assert_eq!(cases.len(), lockkit_conformance::CASES.len());
    for (case, spec) in cases.iter().zip(lockkit_conformance::CASES) {
        assert_eq!(case["name"], spec.name);
        if spec.is_optional() && case["outcome"]["status"] == "skipped" {
            // What SQLite does not claim (`fair`, waiter counts) is skipped, by
            // its capabilities.
            let why = case["outcome"]["reason"].as_str().unwrap_or_default();
            assert!(why.contains("does not claim"), "{case}");
            continue;
        }
        assert_eq!(case["outcome"]["status"], "passed", "{case}");
    }
    let passed = |name: &str| {
        cases
            .iter()
            .any(|c| c["name"] == name && c["outcome"]["status"] == "passed")
    };
    assert!(passed("readers_share") && passed("at_most_limit_permits_under_contention"));
}

#[test]
fn check_reports_process_local_case_as_skipped_on_mem() {
    let (code, r, err) = lockkit(&["check", "mem://", "--json", "--filter", "killed"]);
    assert_eq!(code, 0, "{err}");
    let case = &r["cases"][0];
    assert_eq!(
        case["name"],
        "abandoned_by_killed_process_is_freed_after_ttl"
    );
    assert_eq!(case["outcome"]["status"], "skipped", "{case}");
    assert!(
        case["outcome"]["reason"]
            .as_str()
            .unwrap()
            .contains("process-local")
    );
}

#[test]
fn bench_reports_latency_handoff_and_throughput_against_the_floor_for_each_url() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = format!("sqlite://{}", dir.path().join("b.db").display());
    let (code, out, err) = lockkit(&[
        "bench",
        "mem://",
        &sqlite,
        "--iterations",
        "50",
        "--handoffs",
        "5",
        "--waiters",
        "4",
        "--clients",
        "3",
        "--keys",
        "20",
        "--duration",
        "300ms",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["settings"]["duration_ms"].as_u64(), Some(300), "{out}");
    let backends = out["backends"].as_array().unwrap();
    assert_eq!(backends.len(), 2, "{out}");
    assert_eq!(backends[0]["driver"], "mem", "{out}");
    assert_eq!(backends[1]["driver"], "sqlite", "{out}");
    for r in backends {
        for side in ["lockkit", "floor"] {
            let p50 = r[side]["p50_us"].as_u64().unwrap();
            let p99 = r[side]["p99_us"].as_u64().unwrap();
            assert!(p50 >= 1 && p99 >= p50, "{r}");
            assert_eq!(r[side]["samples"].as_u64(), Some(50), "{r}");
            // The plotted distribution runs from p0 to p100, in order.
            let cdf = r[side]["cdf"].as_array().unwrap();
            assert_eq!(cdf.first().unwrap()[0].as_f64(), Some(0.0), "{r}");
            assert_eq!(cdf.last().unwrap()[0].as_f64(), Some(100.0), "{r}");
            assert!(
                cdf.windows(2).all(|w| w[0][1].as_u64() <= w[1][1].as_u64()),
                "{r}"
            );
        }
        assert!(r["p50_ratio_lockkit_over_floor"].as_f64().unwrap() > 0.0);
        assert!(r["handoff"]["p50_us"].as_u64().unwrap() >= 1, "{r}");
        assert_eq!(r["queue"]["waiters"].as_u64(), Some(4), "{r}");
        assert!(
            r["queue"]["handoff"]["max_us"].as_u64().unwrap() >= 1,
            "{r}"
        );
        for (run, keys) in [("contended", 1), ("many_keys", 20)] {
            for side in ["lockkit", "floor"] {
                let t = &r[run][side];
                assert_eq!(t["clients"].as_u64(), Some(3), "{r}");
                assert_eq!(t["keys"].as_u64(), Some(keys), "{r}");
                assert!(t["grants"].as_u64().unwrap() >= 1, "{r}");
                assert!(t["attempts"].as_u64() >= t["grants"].as_u64(), "{r}");
                assert!(t["seconds"].as_f64().unwrap() >= 0.3, "{r}");
            }
            assert!(
                r[run]["ratio_lockkit_over_floor"].as_f64().unwrap() > 0.0,
                "{r}"
            );
        }
    }
}

#[test]
fn bad_url_exits_2_with_an_actionable_message() {
    let (code, _, err) = lockkit(&["check", "nope://x"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown scheme `nope`"), "{err}");
    assert!(err.contains("sqlite"), "{err}");
    let (code, _, err) = lockkit(&["bench", "sqlite:///no/such/dir/x.db"]);
    assert_eq!(code, 2);
    assert!(err.contains("does not exist"), "{err}");
    // Which backend failed, and what to do about an unreachable server.
    let (code, _, err) = lockkit(&[
        "bench",
        "mem://",
        "redis://127.0.0.1:1",
        "--iterations",
        "10",
        "--handoffs",
        "0",
        "--duration",
        "0",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("benchmarking redis://127.0.0.1:1"), "{err}");
    assert!(
        err.contains("hint: check that the server is running"),
        "{err}"
    );
}

#[test]
fn demo_rejects_out_of_range_arguments() {
    let (code, _, err) = lockkit(&["demo", "--workers", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--workers"), "{err}");
}

/// etcd as users run it (election timeout 1 s) grants no lease under 2 s: the
/// suite must judge a killed holder by the lease etcd granted, not the 1 s asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_passes_against_an_etcd_with_default_flags() {
    let etcd = lockkit_testkit::Etcd::start_with_default_flags()
        .await
        .unwrap();
    let url = etcd.url();
    let (code, r, err) = tokio::task::spawn_blocking(move || lockkit(&["check", &url, "--json"]))
        .await
        .unwrap();
    assert_eq!(code, 0, "{err}\n{r}");
    for case in r["cases"].as_array().unwrap() {
        assert_ne!(case["outcome"]["status"], "failed", "{case}");
    }
    let killed = r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "abandoned_by_killed_process_is_freed_after_ttl")
        .unwrap();
    assert_eq!(killed["outcome"]["status"], "passed", "{killed}");
}

/// ZooKeeper as operators run it (a 2 s tick) and lockkit's default 10 s session:
/// a killed holder's node lives until the session expires, up to a tick past its
/// timeout. The suite judges the killed-holder cases by what the driver reports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_passes_killed_holder_cases_against_zookeeper_defaults() {
    let zk = lockkit_testkit::ZooKeeper::start_with_default_settings()
        .await
        .unwrap();
    let url = zk.url();
    let (code, r, err) = tokio::task::spawn_blocking(move || {
        lockkit(&["check", &url, "--json", "--filter", "killed"])
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{err}\n{r}");
    let cases = r["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 3, "{r}");
    for case in cases {
        assert_eq!(case["outcome"]["status"], "passed", "{case}");
    }
}

/// `check` and `bench` on a live Redis leave no key behind: not the conformance
/// cases' locks, fencing counters or waiter sets, not the benchmark's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_and_bench_leave_no_key_on_redis() {
    let server = lockkit_testkit::Redis::start().await.unwrap();
    let url = server.url();
    let u = url.clone();
    let (code, r, err) = tokio::task::spawn_blocking(move || {
        let check = lockkit(&["check", &u, "--json"]);
        assert_eq!(check.0, 0, "{}\n{}", check.2, check.1);
        lockkit(&[
            "bench",
            &u,
            "--json",
            "--iterations",
            "20",
            "--handoffs",
            "5",
            "--waiters",
            "2",
            "--keys",
            "10",
            "--duration",
            "200ms",
        ])
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{err}\n{r}");
    assert_no_key_left(&url).await;
}

/// Fails if the Redis server at `url` holds any key.
async fn assert_no_key_left(url: &str) {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(keys.is_empty(), "{} keys left: {keys:?}", keys.len());
}

/// `bench` on five Redlock masters measures the raw fenced Redlock floor beside
/// lockkit, and leaves no key on any master: not the floor's locks, nor their
/// counters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_on_redlock_measures_the_fenced_floor_and_leaves_no_key() {
    let masters = lockkit_testkit::RedisMasters::start(5).await.unwrap();
    let url = masters.url();
    let (code, r, err) = tokio::task::spawn_blocking(move || {
        lockkit(&[
            "bench",
            &url,
            "--json",
            "--iterations",
            "20",
            "--handoffs",
            "0",
            "--duration",
            "0",
        ])
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{err}\n{r}");
    let backend = &r["backends"][0];
    assert_eq!(backend["floor"]["samples"].as_u64(), Some(20), "{r}");
    let described = backend["floor_description"].as_str().unwrap();
    assert!(described.contains("fenced Redlock"), "{described}");
    for node in &masters.nodes {
        assert_no_key_left(&format!("redis://127.0.0.1:{}", node.port())).await;
    }
}

/// The same on SQLite: no lease row, no benchmark floor table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_and_bench_leave_no_row_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("l.db");
    let url = format!("sqlite://{}", path.display());
    let u = url.clone();
    tokio::task::spawn_blocking(move || {
        let check = lockkit(&["check", &u, "--json"]);
        assert_eq!(check.0, 0, "{}", check.2);
        let bench = lockkit(&[
            "bench",
            &u,
            "--json",
            "--iterations",
            "20",
            "--handoffs",
            "5",
            "--waiters",
            "2",
            "--keys",
            "10",
            "--duration",
            "200ms",
        ]);
        assert_eq!(bench.0, 0, "{}", bench.2);
    })
    .await
    .unwrap();
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    let rows: Vec<String> = sqlx::query_scalar("SELECT name FROM lockkit_locks")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert!(rows.is_empty(), "lease rows left: {rows:?}");
    let tables: Vec<String> =
        sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table'")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert!(
        !tables.iter().any(|t| t.contains("bench")),
        "tables left: {tables:?}"
    );
}

#[test]
fn check_with_a_filter_that_matches_nothing_fails_and_lists_the_cases() {
    let (code, _, err) = lockkit(&["check", "mem://", "--filter", "nosuchcase"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no conformance case matches"), "{err}");
    assert!(err.contains("mutual_exclusion_under_contention"), "{err}");
}

#[test]
fn bench_says_when_it_is_a_debug_build() {
    let (code, r, err) = lockkit(&[
        "bench",
        "mem://",
        "--json",
        "--iterations",
        "10",
        "--handoffs",
        "0",
        "--waiters",
        "0",
        "--duration",
        "0s",
    ]);
    assert_eq!(code, 0, "{err}");
    // The tests run the debug build.
    assert!(err.contains("debug build"), "{err}");
    assert_eq!(r["debug_build"], true, "{r}");
}

/// Log lines written to a pipe or a file carry no ANSI colour codes, and the
/// watchdog's "lock lost" is not logged: the verbs report losses themselves.
#[test]
fn logs_to_a_pipe_have_no_colour_and_no_duplicate_loss() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("l.db").display());
    let (code, _, err) = lockkit(&["check", &url, "--filter", "lost_signal"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains('\u{1b}'), "colour codes in a pipe: {err:?}");
    assert!(!err.contains("lock lost"), "{err}");
}

#[test]
fn every_verb_takes_the_url_positionally_or_as_an_option() {
    for args in [
        &["check", "mem://", "--filter", "invalid_keys"][..],
        &["check", "--url", "mem://", "--filter", "invalid_keys"][..],
    ] {
        let (code, _, err) = lockkit(args);
        assert_eq!(code, 0, "{args:?}: {err}");
    }
    let (code, _, err) = lockkit(&["check", "mem://", "--url", "mem://other", "--filter", "x"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("two different URLs"), "{err}");
}

/// `compare` checks its arguments and output paths before it runs anything: a bad
/// lease or an unwritable path costs nothing but the error.
#[test]
fn compare_refuses_bad_arguments_and_paths_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html").display().to_string();
    let json = dir.path().join("r.json").display().to_string();
    for (args, needle) in [
        (vec!["--lease", "0"], "--lease"),
        (vec!["--lease", "5ms"], "--lease"),
        (vec!["--html", "/no/such/dir/r.html"], "/no/such/dir/r.html"),
        (vec!["--json", "/no/such/dir/r.json"], "/no/such/dir/r.json"),
        (vec!["--json", html.as_str()], "different paths"),
    ] {
        let started = std::time::Instant::now();
        let mut all = vec!["compare", "mem://"];
        if !args.contains(&"--html") {
            all.extend(["--html", html.as_str()]);
        }
        if !args.contains(&"--json") {
            all.extend(["--json", json.as_str()]);
        }
        all.extend(args.iter().copied());
        let (code, _, err) = lockkit(&all);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{args:?} took {:?}: it ran before refusing",
            started.elapsed()
        );
    }
    let (code, _, err) = lockkit(&["compare", "nosuch://x", "--html", &html, "--json", &json]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown scheme"), "{err}");
}

/// The same backend given twice gets two columns told apart, and the hand-off plot
/// draws the floor reference its caption names.
#[test]
fn compare_labels_the_same_url_twice_apart_and_draws_the_floor_line() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let json = dir.path().join("r.json");
    let sqlite = format!("sqlite://{}", dir.path().join("c.db").display());
    let (code, out, err) = lockkit(&[
        "compare",
        &sqlite,
        &sqlite,
        "--no-check",
        "--iterations",
        "20",
        "--handoffs",
        "3",
        "--waiters",
        "0",
        "--duration",
        "0s",
        "--lease",
        "300ms",
        "--html",
        &html.display().to_string(),
        "--json",
        &json.display().to_string(),
    ]);
    assert_eq!(code, 0, "{err}\n{out}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let labels: Vec<&str> = report["backends"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["sqlite#1", "sqlite#2"]);
    let page = std::fs::read_to_string(&html).unwrap();
    let handoff = &page[page.find("Hand-off latency").unwrap()..page.find("Throughput").unwrap()];
    assert!(handoff.contains("raw floor"), "caption");
    assert_eq!(
        handoff.matches("stroke-dasharray").count(),
        2,
        "one dashed floor line per backend"
    );
}
