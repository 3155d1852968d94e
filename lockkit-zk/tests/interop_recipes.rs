//! `?recipe=curator|curator-rw|kazoo` beside the real libraries, on one real
//! ZooKeeper: Apache Curator from Debian's jars (`CuratorHolder.java`, compiled by
//! the testkit) and kazoo from PyPI (`kazoo_lock.py`, in `ci/setup`'s virtualenv),
//! each contender a process of its own. On one lock path, lockkit and the library
//! exclude each other and are served in the order they queued, both ways;
//! readers share.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::time::Duration;

use lockkit::{LockError, LockGuard, LockMode, Locker, Result};
use lockkit_testkit::{ForeignClient, ZooKeeper, curator_holder, foreign_program, interop_python};
use tokio::task::JoinHandle;
use zookeeper_client::Client;

const WITHIN: Duration = Duration::from_secs(20);
const PATH: &str = "locks/orders";

/// One contender of the foreign library: a process holding at most one lock.
async fn foreign(zk: &ZooKeeper, library: &str) -> ForeignClient {
    let connect = zk.address();
    let path = format!("/{PATH}");
    let mut client = match library {
        "curator" => ForeignClient::spawn("Curator", curator_holder(&connect, &path).unwrap()),
        _ => {
            let mut cmd = tokio::process::Command::new(interop_python().unwrap());
            cmd.arg(foreign_program("kazoo_lock.py"))
                .arg(&connect)
                .arg(&path);
            ForeignClient::spawn("kazoo", cmd)
        }
    }
    .unwrap();
    client.line_containing("ready", WITHIN).await.unwrap();
    client
}

/// Sends `command` (`lock`, `read`, `write`): the contender queues, and holds
/// when its turn comes (see [`held`]).
async fn queue(client: &mut ForeignClient, command: &str) {
    client.send(command).await.unwrap();
    client.line_containing("waiting", WITHIN).await.unwrap();
}

/// Waits for a queued contender to hold; the rest of its line (Curator's mutex
/// prints its node's czxid).
async fn held(client: &mut ForeignClient) -> String {
    let line = client.line_containing("held", WITHIN).await.unwrap();
    line.trim_start_matches("held").trim().to_owned()
}

async fn release(client: &mut ForeignClient) {
    client.send("release").await.unwrap();
    client.line_containing("released", WITHIN).await.unwrap();
}

async fn quit(mut client: ForeignClient) {
    client.send("quit").await.unwrap();
    assert!(client.finish(WITHIN).await.unwrap().success());
}

/// Waits until the lock's queue shows `n` waiters, as lockkit reads it.
async fn until_waiters(lockkit: &Locker, n: usize) {
    lockkit_conformance::until_waiters(lockkit, PATH, n, WITHIN)
        .await
        .unwrap();
}

fn in_background(lockkit: &Locker, mode: LockMode) -> JoinHandle<Result<LockGuard>> {
    let lockkit = lockkit.clone();
    tokio::spawn(async move {
        let request = match mode {
            LockMode::Shared => lockkit.read_lock(PATH),
            _ => lockkit.lock(PATH),
        };
        request.wait(WITHIN).await
    })
}

async fn granted(waiter: JoinHandle<Result<LockGuard>>) -> LockGuard {
    tokio::time::timeout(WITHIN, waiter)
        .await
        .expect("the lockkit waiter was not granted in time")
        .unwrap()
        .unwrap()
}

async fn connect(zk: &ZooKeeper, recipe: &str) -> Locker {
    lockkit::connect(&format!("{}?recipe={recipe}", zk.url()))
        .await
        .unwrap()
}

/// lockkit holds: the library's try is refused. Then the library holds; a
/// lockkit waiter queues, then a second contender of the library. The lock goes
/// library → lockkit → library, in that order, and lockkit's token is above the
/// first holder's node (its czxid, where shown).
async fn mutexes_take_turns_in_queue_order(zk: &ZooKeeper, lockkit: &Locker, library: &str) {
    let (mut first, mut second) = (foreign(zk, library).await, foreign(zk, library).await);
    let ours = lockkit.try_lock(PATH).await.unwrap();
    first.send("try-lock").await.unwrap();
    let tried = first.line_containing("", WITHIN).await.unwrap();
    assert_eq!(tried, "busy", "{library} got in while lockkit held");
    ours.release().await.unwrap();

    queue(&mut first, "lock").await;
    let czxid = held(&mut first).await;
    match lockkit.try_lock(PATH).await {
        Err(LockError::Contended { .. }) => {}
        other => panic!("lockkit granted while {library} held: {other:?}"),
    }
    let seen = lockkit.inspect(PATH).await.unwrap();
    assert_eq!(seen.holders.len(), 1, "{seen:?}");
    if let Ok(czxid) = czxid.parse::<u64>() {
        assert_eq!(seen.holders[0].token.get(), czxid, "{seen:?}");
    }
    let waiter = in_background(lockkit, LockMode::Exclusive);
    until_waiters(lockkit, 1).await;
    queue(&mut second, "lock").await;
    until_waiters(lockkit, 2).await;

    release(&mut first).await;
    let guard = granted(waiter).await;
    assert!(guard.token() > seen.holders[0].token);
    let seen = lockkit.inspect(PATH).await.unwrap();
    assert_eq!(
        seen.holders[0].token,
        guard.token(),
        "lockkit holds: {seen:?}"
    );
    assert_eq!(seen.waiters, Some(1), "{library} still waits: {seen:?}");
    first.send("try-lock").await.unwrap();
    assert_eq!(first.line_containing("", WITHIN).await.unwrap(), "busy");

    guard.release().await.unwrap();
    held(&mut second).await;
    match lockkit.try_lock(PATH).await {
        Err(LockError::Contended { .. }) => {}
        other => panic!("lockkit granted while {library} held: {other:?}"),
    }
    release(&mut second).await;
    quit(first).await;
    quit(second).await;
}

/// A library reader and a lockkit reader share; a lockkit writer queues behind
/// them, and a library reader behind the writer waits for it (readers do not jump
/// a queued writer); then the library's writer waits for lockkit's reader.
async fn readers_share_and_writers_exclude(zk: &ZooKeeper, lockkit: &Locker, library: &str) {
    let (mut reader, mut late) = (foreign(zk, library).await, foreign(zk, library).await);
    queue(&mut reader, "read").await;
    held(&mut reader).await;
    let ours = lockkit.read_lock(PATH).no_wait().await.unwrap();
    let writer = in_background(lockkit, LockMode::Exclusive);
    until_waiters(lockkit, 1).await;
    queue(&mut late, "read").await;
    until_waiters(lockkit, 2).await;

    release(&mut reader).await;
    ours.release().await.unwrap();
    let written = granted(writer).await;
    let seen = lockkit.inspect(PATH).await.unwrap();
    assert_eq!(seen.holders.len(), 1, "the writer alone holds: {seen:?}");
    assert_eq!(seen.waiters, Some(1), "the late reader waits: {seen:?}");
    written.release().await.unwrap();
    held(&mut late).await;

    // A library writer waits for lockkit's reader.
    let ours = lockkit.read_lock(PATH).no_wait().await.unwrap();
    release(&mut late).await;
    late.send("try-write").await.unwrap();
    assert_eq!(late.line_containing("", WITHIN).await.unwrap(), "busy");
    queue(&mut late, "write").await;
    until_waiters(lockkit, 1).await;
    ours.release().await.unwrap();
    held(&mut late).await;
    release(&mut late).await;
    quit(reader).await;
    quit(late).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_mutex_and_lockkit_take_turns_in_queue_order() {
    let zk = ZooKeeper::start().await.unwrap();
    let lockkit = connect(&zk, "curator").await;
    mutexes_take_turns_in_queue_order(&zk, &lockkit, "curator").await;
    match lockkit.read_lock(PATH).no_wait().await {
        Err(LockError::Unsupported { .. }) => {}
        other => panic!("a read hold with recipe=curator: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_read_write_lock_and_lockkit_share_readers_and_exclude_writers() {
    let zk = ZooKeeper::start().await.unwrap();
    let lockkit = connect(&zk, "curator-rw").await;
    readers_share_and_writers_exclude(&zk, &lockkit, "curator").await;
}

/// Waits until the server's container sweep has run since now: a lockkit key
/// used once, whose container node is then empty, is gone.
async fn until_containers_swept(zk: &ZooKeeper, raw: &Client) {
    let probe = connect(zk, "lockkit").await;
    probe
        .try_lock("sweep-probe")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    let swept = async {
        while raw
            .check_stat("/lockkit/sweep-probe")
            .await
            .unwrap()
            .is_some()
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(WITHIN, swept)
        .await
        .expect("the server never swept an empty container");
}

/// kazoo's `Lock` remembers that its path exists. The path lockkit makes for
/// it is persistent, as kazoo's own: a `Lock` that queued once locks again
/// after every holder left and the server swept its empty containers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kazoo_lock_locks_again_after_the_server_sweeps_empty_containers() {
    let zk = ZooKeeper::start().await.unwrap();
    let raw = Client::connect(&zk.address()).await.unwrap();
    let lockkit = connect(&zk, "kazoo").await;
    let mut kazoo = foreign(&zk, "kazoo").await;
    let ours = lockkit.try_lock(PATH).await.unwrap();
    kazoo.send("try-lock").await.unwrap();
    assert_eq!(kazoo.line_containing("", WITHIN).await.unwrap(), "busy");
    ours.release().await.unwrap();

    until_containers_swept(&zk, &raw).await;
    let path = format!("/{PATH}");
    assert!(
        raw.check_stat(&path).await.unwrap().is_some(),
        "{path} was swept"
    );
    queue(&mut kazoo, "lock").await;
    held(&mut kazoo).await;
    release(&mut kazoo).await;
    quit(kazoo).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_locks_and_lockkit_take_turns_share_readers_and_exclude_writers() {
    let zk = ZooKeeper::start().await.unwrap();
    let lockkit = connect(&zk, "kazoo").await;
    mutexes_take_turns_in_queue_order(&zk, &lockkit, "kazoo").await;
    readers_share_and_writers_exclude(&zk, &lockkit, "kazoo").await;
    match lockkit.semaphore(PATH, 2).try_acquire().await {
        Err(LockError::Unsupported { .. }) => {}
        other => panic!("a semaphore with recipe=kazoo: {other:?}"),
    }
    match lockkit.try_lock("locks//orders").await {
        Err(LockError::Config(_)) => {}
        other => panic!("a key that is no path: {other:?}"),
    }
}
