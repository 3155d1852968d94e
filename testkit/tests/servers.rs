//! Each server starts, pauses, resumes, dies and restarts as promised; the fault
//! proxy forwards, black-holes and resets.

#![allow(clippy::unwrap_used, clippy::panic)] // Tests fail by panicking.

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
