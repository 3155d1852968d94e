//! Each server starts, pauses, resumes, dies and restarts as promised; the fault
//! proxy forwards, black-holes, holds replies and resets.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit_testkit::{Fault, FaultProxy, MariaDb, Postgres, Redis, RedisMasters};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends `hello` (may be empty) and waits up to 500 ms for at least one byte back.
async fn responds(port: u16, hello: &[u8]) -> bool {
    let attempt = async {
        let mut s = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
        if !hello.is_empty() {
            s.write_all(hello).await.ok()?;
        }
        let mut b = [0u8; 1];
        let n = s.read(&mut b).await.ok()?;
        Some(n == 1)
    };
    matches!(
        tokio::time::timeout(Duration::from_millis(500), attempt).await,
        Ok(Some(true))
    )
}

const REDIS_PING: &[u8] = b"PING\r\n";
/// PostgreSQL's SSLRequest: the server answers one byte ('N' here).
const PG_SSL_REQUEST: &[u8] = &[0, 0, 0, 8, 4, 210, 22, 47];
/// MariaDB greets first.
const MARIADB_NOTHING: &[u8] = b"";

async fn lifecycle(
    port: u16,
    hello: &[u8],
    srv: &mut impl std::ops::DerefMut<Target = lockkit_testkit::Server>,
) {
    assert!(responds(port, hello).await, "not answering after start");
    srv.pause();
    assert!(!responds(port, hello).await, "answered while paused");
    srv.resume();
    assert!(responds(port, hello).await, "not answering after resume");
    let pid = srv.pid().unwrap();
    srv.kill();
    assert!(!responds(port, hello).await, "answered after kill");
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "process {pid} survived kill"
    );
}

#[tokio::test]
async fn redis_starts_pauses_resumes_dies_and_restarts() {
    let mut r = Redis::start().await.unwrap();
    let port = r.port();
    assert_eq!(r.url(), format!("redis://127.0.0.1:{port}"));
    lifecycle(port, REDIS_PING, &mut r).await;
    r.restart().await.unwrap();
    assert!(responds(port, REDIS_PING).await);
}

#[tokio::test]
async fn postgres_starts_pauses_resumes_dies_and_restarts() {
    let mut pg = Postgres::start().await.unwrap();
    let port = pg.port();
    assert!(pg.url().starts_with("postgres://postgres@127.0.0.1:"));
    lifecycle(port, PG_SSL_REQUEST, &mut pg).await;
    pg.restart().await.unwrap();
    assert!(responds(port, PG_SSL_REQUEST).await);
}

#[tokio::test]
async fn mariadb_starts_pauses_resumes_dies_and_restarts() {
    let mut db = MariaDb::start().await.unwrap();
    let port = db.port();
    assert!(db.url().ends_with("/lockkit"));
    lifecycle(port, MARIADB_NOTHING, &mut db).await;
    db.restart().await.unwrap();
    assert!(responds(port, MARIADB_NOTHING).await);
}

#[tokio::test]
async fn dropping_a_handle_stops_its_process_group() {
    let pg = Postgres::start().await.unwrap();
    let pid = pg.pid().unwrap();
    drop(pg);
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
}

/// The files the process `pid` maps whose path contains `part`.
fn mapped_files(pid: u32, part: &str) -> Vec<String> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let mut files: Vec<String> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|path| path.contains(part))
        .map(String::from)
        .collect();
    files.dedup();
    files
}

#[tokio::test]
async fn a_killed_postgres_leaves_no_shared_memory_behind() {
    let mut pg = Postgres::start().await.unwrap();
    let pid = pg.pid().unwrap();
    // A killed server cannot remove its dynamic shared memory: it must be
    // where the server's own directory goes with it, not in /dev/shm.
    assert_eq!(
        mapped_files(pid, "/dev/shm/PostgreSQL."),
        Vec::<String>::new()
    );
    let segments = mapped_files(pid, "/pg_dynshmem/");
    assert!(
        !segments.is_empty(),
        "no dynamic shared memory in the data directory"
    );
    pg.kill();
    drop(pg);
    for segment in segments {
        assert!(
            !std::path::Path::new(&segment).exists(),
            "{segment} outlived the server"
        );
    }
}

#[tokio::test]
async fn redis_masters_are_independent() {
    let mut m = RedisMasters::start(3).await.unwrap();
    let ports: Vec<u16> = m.nodes.iter().map(|n| n.port()).collect();
    assert!(m.url().starts_with("redlock://127.0.0.1:"));
    m.nodes[1].kill();
    assert!(responds(ports[0], REDIS_PING).await);
    assert!(!responds(ports[1], REDIS_PING).await);
    assert!(responds(ports[2], REDIS_PING).await);
}

#[tokio::test]
async fn proxy_forwards_black_holes_and_resets() {
    let r = Redis::start().await.unwrap();
    let proxy = FaultProxy::start(r.port()).await.unwrap();
    assert!(responds(proxy.port(), REDIS_PING).await);

    proxy.set(Fault::BlackHole);
    assert!(
        !responds(proxy.port(), REDIS_PING).await,
        "answered through a black hole"
    );
    proxy.set(Fault::Forward);
    assert!(responds(proxy.port(), REDIS_PING).await);

    proxy.set(Fault::Delay(Duration::from_millis(200)));
    let t = std::time::Instant::now();
    assert!(responds(proxy.port(), REDIS_PING).await);
    assert!(
        t.elapsed() >= Duration::from_millis(400),
        "two delayed hops took {:?}",
        t.elapsed()
    );
    proxy.set(Fault::Forward);

    // An open connection is cut by reset.
    let mut s = TcpStream::connect(("127.0.0.1", proxy.port()))
        .await
        .unwrap();
    s.write_all(REDIS_PING).await.unwrap();
    let mut buf = [0u8; 7];
    s.read_exact(&mut buf).await.unwrap();
    proxy.reset();
    let mut more = [0u8; 1];
    let cut = tokio::time::timeout(Duration::from_secs(2), async {
        let _ = s.write_all(REDIS_PING).await;
        s.read(&mut more).await
    })
    .await
    .unwrap();
    assert!(
        matches!(cut, Ok(0) | Err(_)),
        "connection survived reset: {cut:?}"
    );
}

/// With `HoldReplies`, a request through the proxy runs on the server (another
/// client reads what it wrote) but its reply does not come back.
#[tokio::test]
async fn proxy_holding_replies_lets_requests_run_unanswered() {
    let r = Redis::start().await.unwrap();
    let proxy = FaultProxy::start(r.port()).await.unwrap();
    assert!(responds(proxy.port(), REDIS_PING).await);
    proxy.set(Fault::HoldReplies);
    assert!(
        !responds(proxy.port(), b"SET held 1\r\n").await,
        "a reply came back"
    );
    let mut direct = TcpStream::connect(("127.0.0.1", r.port())).await.unwrap();
    direct.write_all(b"GET held\r\n").await.unwrap();
    let mut got = [0u8; 7];
    tokio::time::timeout(Duration::from_secs(2), direct.read_exact(&mut got))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&got, b"$1\r\n1\r\n");
    proxy.set(Fault::Forward);
    assert!(responds(proxy.port(), REDIS_PING).await);
}

const ZK_SRVR: &[u8] = b"srvr";

/// Whether ZooKeeper reports a mode (leader/follower/standalone), i.e. serves.
async fn zk_serving(port: u16) -> bool {
    let attempt = async {
        let mut s = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
        s.write_all(ZK_SRVR).await.ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).await.ok()?;
        Some(out.contains("Mode:"))
    };
    matches!(
        tokio::time::timeout(Duration::from_millis(1000), attempt).await,
        Ok(Some(true))
    )
}

#[tokio::test]
async fn etcd_starts_pauses_resumes_dies_and_restarts() {
    let mut e = lockkit_testkit::Etcd::start().await.unwrap();
    let port = e.port();
    assert_eq!(e.url(), format!("etcd://127.0.0.1:{port}"));
    // etcd speaks HTTP/2 (gRPC) and HTTP/1 on the client port; a GET answers.
    let get = b"GET /health HTTP/1.0\r\n\r\n";
    lifecycle(port, get, &mut e).await;
    e.restart().await.unwrap();
    assert!(responds(port, get).await);
}

#[tokio::test]
async fn etcd_cluster_elects_a_new_leader_after_a_leader_kill() {
    let mut c = lockkit_testkit::EtcdCluster::start(3).await.unwrap();
    assert_eq!(c.url().matches("127.0.0.1:").count(), 3);
    let leader = c.leader().await.unwrap();
    c.members[leader].kill();
    let mut new_leader = None;
    for _ in 0..100 {
        new_leader = c.leader().await;
        if new_leader.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let new_leader = new_leader.unwrap();
    assert_ne!(new_leader, leader);
    c.members[leader].restart().await.unwrap();
}

#[tokio::test]
async fn zookeeper_starts_pauses_resumes_dies_and_restarts() {
    let mut zk = lockkit_testkit::ZooKeeper::start().await.unwrap();
    let port = zk.port();
    assert_eq!(zk.url(), format!("zk://127.0.0.1:{port}"));
    lifecycle(port, ZK_SRVR, &mut zk).await;
    zk.restart().await.unwrap();
    assert!(responds(port, ZK_SRVR).await);
}

#[tokio::test]
async fn zookeeper_ensemble_serves_with_one_member_killed() {
    let mut e = lockkit_testkit::ZooKeeperEnsemble::start(3).await.unwrap();
    assert_eq!(e.url().matches("127.0.0.1:").count(), 3);
    let ports: Vec<u16> = e.members.iter().map(|m| m.port()).collect();
    e.members[0].kill();
    // The two left keep a quorum; poll until both serve (after re-election if the
    // leader was killed).
    let mut serving = false;
    for _ in 0..100 {
        if zk_serving(ports[1]).await && zk_serving(ports[2]).await {
            serving = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(serving);
}

#[tokio::test]
async fn redis_cluster_assigns_every_slot() {
    let c = lockkit_testkit::RedisCluster::start(3).await.unwrap();
    assert!(c.url().starts_with("redis-cluster://"));
    for n in &c.nodes {
        assert!(responds(n.port(), REDIS_PING).await);
    }
}

/// `redis-cli` against the node on `port`, its output trimmed; with `-c` among
/// `args`, it follows the cluster's redirects.
fn redis_cli(port: u16, args: &[&str]) -> String {
    let out = std::process::Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[tokio::test]
async fn a_replicated_cluster_promotes_the_replica_of_a_killed_master() {
    let mut c = lockkit_testkit::RedisCluster::start_replicated(3, 1)
        .await
        .unwrap();
    let roles = |c: &lockkit_testkit::RedisCluster| -> Vec<(u16, String)> {
        c.nodes
            .iter()
            .map(|n| (n.port(), redis_cli(n.port(), &["role"])))
            .collect()
    };
    let before = roles(&c);
    let masters = before
        .iter()
        .filter(|(_, r)| r.starts_with("master"))
        .count();
    assert_eq!((before.len(), masters), (6, 3), "{before:?}");
    let seed = c.nodes[0].port();
    assert_eq!(redis_cli(seed, &["-c", "set", "kept", "before"]), "OK");
    // Its master (the node that answers without a redirect) has it replicated.
    let (master, _) = before
        .iter()
        .find(|(p, _)| redis_cli(*p, &["get", "kept"]) == "before")
        .unwrap();
    assert_eq!(redis_cli(*master, &["wait", "1", "5000"]), "1");

    let new = c
        .fail_over_master_of("kept", Duration::from_secs(20))
        .await
        .unwrap();

    let was = |port: u16| &before.iter().find(|(p, _)| *p == port).unwrap().1;
    assert!(was(new).starts_with("slave"), "{new} was {}", was(new));
    let down: Vec<u16> = roles(&c)
        .into_iter()
        .filter(|(_, r)| r.is_empty())
        .map(|(p, _)| p)
        .collect();
    assert_eq!(down, [*master], "only the key's master was killed");
    assert!(redis_cli(new, &["role"]).starts_with("master"));
    assert_eq!(redis_cli(new, &["get", "kept"]), "before");
}

/// Whether `redis-cli --tls` (with the client certificate if given) gets PONG.
fn tls_cli_pings(r: &Redis, client_cert: bool) -> bool {
    let files = r.tls_files().unwrap();
    let mut cmd = std::process::Command::new("redis-cli");
    cmd.arg("--tls").arg("--cacert").arg(&files.ca);
    if client_cert {
        cmd.arg("--cert").arg(&files.client_cert);
        cmd.arg("--key").arg(&files.client_key);
    }
    let out = cmd
        .args(["-h", "127.0.0.1", "-p", &r.port().to_string(), "ping"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "PONG"
}

#[tokio::test]
async fn redis_tls_serves_only_tls_with_its_own_ca_and_restarts() {
    let mut r = Redis::start_tls().await.unwrap();
    let port = r.port();
    let ca = r.tls_files().unwrap().ca.clone();
    assert!(ca.is_file());
    assert_eq!(
        r.url(),
        format!("rediss://127.0.0.1:{port}?tls_ca={}", ca.display())
    );
    assert!(tls_cli_pings(&r, false));
    let mut plain = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    plain.write_all(REDIS_PING).await.unwrap();
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), plain.read_to_end(&mut buf)).await;
    assert!(read.is_ok(), "a plain-text PING to the TLS port hung");
    assert!(!String::from_utf8_lossy(&buf).contains("PONG"), "{buf:?}");
    r.restart().await.unwrap();
    assert!(tls_cli_pings(&r, false));
}

#[tokio::test]
async fn redis_mutual_tls_requires_the_client_certificate() {
    let r = Redis::start_mutual_tls().await.unwrap();
    assert!(r.url().contains("&tls_cert="), "{}", r.url());
    assert!(tls_cli_pings(&r, true));
    assert!(!tls_cli_pings(&r, false));
}
