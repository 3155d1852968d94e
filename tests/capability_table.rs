//! The capability table in README.md, generated from what each driver reports
//! ([`lockkit::driver::Capabilities`]) when connected to a real server started by
//! the testkit. The test fails when a copy drifts from the drivers; run it with
//! `LOCKKIT_BLESS=1` to rewrite every copy (between the `capability-table`
//! markers in README.md and docs/*.md).

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.
#![cfg(all(
    feature = "mem",
    feature = "sqlite",
    feature = "postgres",
    feature = "mysql",
    feature = "redis",
    feature = "etcd",
    feature = "zk",
    feature = "consul"
))]

use std::path::{Path, PathBuf};

use lockkit::driver::{Capabilities, Inspect, WakeUp};
use lockkit_testkit::{
    ConsulStandIn, Etcd, MariaDb, Postgres, Redis, RedisCluster, RedisMasters, ZooKeeper,
};

const START: &str = "<!-- capability-table:start";
const END: &str = "<!-- capability-table:end -->";

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// One row of the table.
fn row(backend: &str, c: &Capabilities) -> String {
    let inspect = match c.inspect {
        Inspect::No => "no",
        Inspect::Holders => "holders",
        Inspect::HoldersAndWaiters => "holders, waiters",
        _ => "?",
    };
    let wake_up = match c.wake_up {
        WakeUp::Notify => "notified",
        WakeUp::Poll => "poll",
        _ => "?",
    };
    let expiry = if c.lease_expiry { "lease" } else { "session" };
    let fair = match (c.fair, c.fair_on_request) {
        (true, _) => "yes",
        (false, true) => "on request",
        (false, false) => "no",
    };
    // `lock_all` is core's: where the driver can, every key in one request,
    // else (and whenever a key is held) one by one in their byte order.
    let several_keys = if c.several_keys_at_once {
        "at once"
    } else {
        "in order"
    };
    format!(
        "| {backend} | {} | {} | {fair} | {several_keys} | {} | {expiry} | {wake_up} | {inspect} \
         | {} | {} | {} | {} |",
        yes(c.shared),
        yes(c.permits),
        yes(c.transaction_locks),
        yes(c.proclaim),
        yes(c.watch),
        yes(c.list),
        yes(c.cross_process),
    )
}

/// The table, from drivers connected to `urls` (backend, URL).
async fn table(urls: &[(&str, String)]) -> String {
    let mut out = String::from(
        "| backend | read-write | semaphore | fair | several keys | in your transaction | \
         a vanished holder ends with its | waiters | inspect | proclaim | watch | list | \
         across processes |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (backend, url) in urls {
        let locker = lockkit::connect(url)
            .await
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        out.push_str(&row(backend, &locker.capabilities()));
        out.push('\n');
    }
    out
}

/// Every file holding the markers: README.md and the guides.
fn copies() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    if let Ok(docs) = std::fs::read_dir(root.join("docs")) {
        files.extend(docs.flatten().map(|e| e.path()));
    }
    files
        .into_iter()
        .filter(|f| std::fs::read_to_string(f).is_ok_and(|t| t.contains(START)))
        .collect()
}

/// `text` with the table between its markers replaced by `table`; `None` without
/// markers.
fn with_table(text: &str, table: &str) -> Option<String> {
    let start = text.find(START)?;
    let body = start + text[start..].find("-->")? + 3;
    let end = body + text[body..].find(END)?;
    Some(format!("{}\n{table}{}", &text[..body], &text[end..]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_copy_of_the_capability_table_matches_the_drivers() {
    let dir = tempfile::tempdir().unwrap();
    let (pg, maria, redis) = (
        Postgres::start().await.unwrap(),
        MariaDb::start().await.unwrap(),
        Redis::start().await.unwrap(),
    );
    let (cluster, masters) = (
        RedisCluster::start(3).await.unwrap(),
        RedisMasters::start(3).await.unwrap(),
    );
    let (etcd, zk, consul) = (
        Etcd::start().await.unwrap(),
        ZooKeeper::start().await.unwrap(),
        ConsulStandIn::start().await.unwrap(),
    );
    let sqlite = format!("sqlite://{}", dir.path().join("locks.db").display());
    let urls = [
        ("mem", "mem://".to_owned()),
        ("SQLite", sqlite),
        ("PostgreSQL", pg.url()),
        ("PostgreSQL advisory", format!("{}?mode=advisory", pg.url())),
        ("MySQL / MariaDB", maria.url()),
        ("MySQL `GET_LOCK`", format!("{}?mode=get_lock", maria.url())),
        ("Redis, Sentinel", redis.url()),
        ("Redis Cluster", cluster.url()),
        ("Redlock", masters.url()),
        ("etcd", etcd.url()),
        ("ZooKeeper", zk.url()),
        ("Consul (stand-in)", consul.url()),
    ];
    let table = table(&urls).await;
    let bless = std::env::var_os("LOCKKIT_BLESS").is_some();
    let copies = copies();
    assert!(
        !copies.is_empty(),
        "no file holds the capability-table markers"
    );
    for file in copies {
        let text = std::fs::read_to_string(&file).unwrap();
        let fresh = with_table(&text, &table).unwrap();
        if bless {
            std::fs::write(&file, fresh).unwrap();
        } else {
            assert!(
                fresh == text,
                "{} holds a capability table that is not the drivers' own: run \
                 `LOCKKIT_BLESS=1 cargo test --workspace --all-features --test \
                 capability_table`.\nThe drivers say:\n{table}",
                file.display()
            );
        }
    }
}

/// The drift check itself: a stale table is found, and blessing mends it.
#[test]
fn a_stale_table_is_replaced_between_its_markers() {
    let stale = format!("intro\n{START} (x) -->\n| old |\n{END}\nafter\n");
    let fresh = with_table(&stale, "| new |\n").unwrap();
    assert_eq!(
        fresh,
        format!("intro\n{START} (x) -->\n| new |\n{END}\nafter\n")
    );
    assert_ne!(fresh, stale);
    assert_eq!(with_table("no markers", "| new |\n"), None);
}
