//! `lockkit inspect`, `lockkit ls` and `lockkit break`, run as an operator would, against a
//! SQLite file and a real Redis and etcd from the testkit, while a service holds
//! the lock.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::process::Stdio;
use std::time::Duration;

use lockkit::{LockError, Locker};
use serde_json::Value;

/// Runs the binary: exit code, stdout, stderr.
async fn lockkit(args: &[&str]) -> (i32, String, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_lockkit"))
        .args(args)
        .env_remove("LOCKKIT_URL")
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

/// Two readers hold `orders`: `inspect --json` shows both, with mode, token,
/// lease and label; the table says the same; a free key is free.
async fn inspect_shows_the_holders(url: &str) {
    let service = lockkit::connect(url).await.unwrap().with_label("billing-7");
    let a = service.read_lock("orders").no_wait().await.unwrap();
    let other: Locker = lockkit::connect(url).await.unwrap().with_label("billing-8");
    let c = other.read_lock("orders").no_wait().await.unwrap();
    let (code, out, err) = lockkit(&["inspect", url, "orders", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    let seen: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(seen["held"], true, "{out}");
    let holders = seen["holders"].as_array().unwrap();
    assert_eq!(holders.len(), 2, "{out}");
    let mut tokens: Vec<u64> = holders
        .iter()
        .map(|h| h["token"].as_u64().unwrap())
        .collect();
    tokens.sort_unstable();
    assert_eq!(tokens, [a.token().get(), c.token().get()], "{out}");
    for h in holders {
        assert_eq!(h["mode"], "shared", "{out}");
        assert!(h["remaining_ms"].as_u64().is_some_and(|ms| ms > 0), "{out}");
    }
    let labels: Vec<&str> = holders.iter().filter_map(|h| h["label"].as_str()).collect();
    assert!(
        labels.contains(&"billing-7") && labels.contains(&"billing-8"),
        "{out}"
    );
    let (code, table, err) = lockkit(&["inspect", url, "orders"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        table.contains("held by 2 holders") && table.contains("billing-8"),
        "{table}"
    );
    a.release().await.unwrap();
    c.release().await.unwrap();
    let (code, table, _) = lockkit(&["inspect", url, "orders"]).await;
    assert_eq!(code, 0);
    assert!(table.contains("`orders` is free"), "{table}");
}

/// `break --yes` frees a held lock (its holder's next renewal says lost) and
/// exits 0; on a free key it exits 1; without `--yes` and no terminal it
/// refuses and leaves the holder alone.
async fn break_frees_the_key_only_when_told(url: &str) {
    let service = lockkit::connect(url).await.unwrap().with_label("stuck-job");
    let held = service.lock("nightly").no_wait().await.unwrap();
    let (code, _, err) = lockkit(&["break", url, "nightly"]).await;
    assert_eq!(code, 2, "without --yes and no terminal: {err}");
    assert!(err.contains("--yes"), "{err}");
    held.extend(Duration::from_secs(5))
        .await
        .expect("break without --yes touched the holder");
    let (code, out, err) = lockkit(&["break", url, "nightly", "--yes"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("stuck-job") && out.contains("freed"), "{out}");
    match held.extend(Duration::from_secs(5)).await {
        Err(LockError::Lost { .. }) => {}
        other => panic!("the broken holder's renewal: expected Lost, got {other:?}"),
    }
    let (code, out, _) = lockkit(&["break", url, "nightly", "--yes"]).await;
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("nothing to break"), "{out}");
}

/// `ls --prefix` lists exactly the held locks under the prefix, with their
/// holders; `ls` without one lists every held lock; a released lock is gone.
async fn ls_lists_the_held_locks(url: &str) {
    let service = lockkit::connect(url).await.unwrap().with_label("lister");
    let a = service.lock("jobs/a").no_wait().await.unwrap();
    let b = service.read_lock("jobs/b").no_wait().await.unwrap();
    let other = service.lock("other").no_wait().await.unwrap();
    let (code, out, err) = lockkit(&["ls", url, "--prefix", "jobs/", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    let all: Value = serde_json::from_str(&out).unwrap();
    let keys: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["key"].as_str())
        .collect();
    assert_eq!(keys, ["jobs/a", "jobs/b"], "{out}");
    assert_eq!(all[0]["holders"][0]["token"], a.token().get(), "{out}");
    assert_eq!(all[1]["holders"][0]["mode"], "shared", "{out}");
    let (code, table, err) = lockkit(&["ls", url]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        table.contains("other") && table.contains("jobs/a") && table.contains("3 locks held"),
        "{table}"
    );
    for g in [a, b, other] {
        g.release().await.unwrap();
    }
    let (code, table, _) = lockkit(&["ls", url, "--prefix", "jobs/"]).await;
    assert_eq!(code, 0);
    assert!(table.contains("no lock is held"), "{table}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_ls_and_break_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("l.db").display());
    inspect_shows_the_holders(&url).await;
    ls_lists_the_held_locks(&url).await;
    break_frees_the_key_only_when_told(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_ls_and_break_on_redis() {
    let server = lockkit_testkit::Redis::start().await.unwrap();
    inspect_shows_the_holders(&server.url()).await;
    ls_lists_the_held_locks(&server.url()).await;
    break_frees_the_key_only_when_told(&server.url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_ls_and_break_on_etcd() {
    let server = lockkit_testkit::Etcd::start().await.unwrap();
    inspect_shows_the_holders(&server.url()).await;
    ls_lists_the_held_locks(&server.url()).await;
    break_frees_the_key_only_when_told(&server.url()).await;
}

/// Looking writes nothing: `inspect`, `ls` and `break` on a database where
/// nothing was ever locked create no table, and say that nothing was locked
/// there (exit 2).
async fn looking_at_an_empty_database_writes_nothing(url: &str) {
    for verb in [
        &["inspect", url, "orders"][..],
        &["ls", url][..],
        &["break", url, "orders", "--yes"][..],
    ] {
        let (code, out, err) = lockkit(verb).await;
        assert_eq!(code, 2, "{verb:?}: {out}{err}");
        assert!(
            err.contains("nothing has been locked there yet"),
            "{verb:?}: {err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn looking_creates_no_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("l.db");
    looking_at_an_empty_database_writes_nothing(&format!("sqlite://{}", file.display())).await;
    assert!(!file.exists(), "looking created {}", file.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_ls_and_break_on_postgres_create_no_table() {
    let server = lockkit_testkit::Postgres::start().await.unwrap();
    let tables = || async {
        let out = server
            .psql()
            .unwrap()
            .args([
                "-c",
                "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'",
            ])
            .output()
            .await
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    for url in [server.url(), format!("{}?mode=advisory", server.url())] {
        looking_at_an_empty_database_writes_nothing(&url).await;
        assert_eq!(tables().await, "0", "{url}: looking created tables");
    }
    inspect_shows_the_holders(&server.url()).await;
    ls_lists_the_held_locks(&server.url()).await;
    break_frees_the_key_only_when_told(&server.url()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_ls_and_break_on_mariadb_create_no_table() {
    let server = lockkit_testkit::MariaDb::start().await.unwrap();
    let tables = || async {
        let out = server
            .client()
            .unwrap()
            .args([
                "-e",
                "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'lockkit'",
            ])
            .output()
            .await
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    for url in [server.url(), format!("{}?mode=get_lock", server.url())] {
        looking_at_an_empty_database_writes_nothing(&url).await;
        assert_eq!(tables().await, "0", "{url}: looking created tables");
    }
    inspect_shows_the_holders(&server.url()).await;
    ls_lists_the_held_locks(&server.url()).await;
    break_frees_the_key_only_when_told(&server.url()).await;
}
