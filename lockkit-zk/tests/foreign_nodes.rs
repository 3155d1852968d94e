//! Sequential nodes lockkit did not make, on a lock's path (Curator's, kazoo's,
//! anyone's): each is an exclusive contender in sequence order. lockkit never
//! grants past one, and a lockkit waiter behind one is granted when it goes.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::time::Duration;

use lockkit_core::{LockError, LockMode, Locker};
use lockkit_testkit::ZooKeeper;
use lockkit_zk::{ZkDriver, ZkOptions};
use zookeeper_client::{Acls, Client, CreateMode};

async fn locker(url: &str) -> Locker {
    let d = ZkDriver::connect(ZkOptions::from_url(url).unwrap())
        .await
        .unwrap();
    Locker::new(Arc::new(d))
}

/// A foreign client holds `orders` with a node named as Curator names its
/// mutex's (`_c_<uuid>-lock-<sequence>`): lockkit's try_lock is refused,
/// inspection shows it as the exclusive holder, a lockkit waiter queued behind
/// it is granted once it is deleted, and a foreign node created after that
/// waiter does not jump ahead of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_sequential_node_is_an_exclusive_contender() {
    let zk = ZooKeeper::start().await.unwrap();
    let raw = Client::connect(&zk.address()).await.unwrap();
    let container = CreateMode::Container.with_acls(Acls::anyone_all());
    for dir in ["/lockkit", "/lockkit/orders"] {
        raw.create(dir, &[], &container).await.unwrap();
    }
    let node = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let (_, seq) = raw
        .create(
            "/lockkit/orders/_c_3f9e0c1a-8b1f-4a53-9f3e-2b7c1d0e4a55-lock-",
            b"10.0.0.9",
            &node,
        )
        .await
        .unwrap();
    let foreign = format!("/lockkit/orders/_c_3f9e0c1a-8b1f-4a53-9f3e-2b7c1d0e4a55-lock-{seq}");

    let a = locker(&zk.url()).await;
    match a.try_lock("orders").await {
        Err(LockError::Contended { .. }) => {}
        other => panic!("lockkit granted past a foreign node: {other:?}"),
    }
    let seen = a.inspect("orders").await.unwrap();
    assert_eq!(seen.holders.len(), 1, "{seen:?}");
    assert_eq!(seen.holders[0].mode, LockMode::Exclusive);
    assert_eq!(seen.holders[0].label.as_deref(), Some("10.0.0.9"));

    // A lockkit waiter queues behind the foreign node.
    let waiting = {
        let a = a.clone();
        tokio::spawn(async move {
            a.lock("orders")
                .ttl(Duration::from_secs(10))
                .wait(Duration::from_secs(30))
                .await
        })
    };
    lockkit_conformance::until_waiters(&a, "orders", 1, Duration::from_secs(10))
        .await
        .unwrap();
    // A foreign node created now is behind the waiter: it does not hold.
    let (_, later) = raw
        .create("/lockkit/orders/kazoo-uuid__lock__", b"", &node)
        .await
        .unwrap();
    assert!(
        !waiting.is_finished(),
        "granted while the foreign node held"
    );

    raw.delete(&foreign, None).await.unwrap();
    let guard = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the waiter was not granted within 10 s of the foreign node's delete")
        .unwrap()
        .unwrap();
    let seen = a.inspect("orders").await.unwrap();
    assert_eq!(seen.holders.len(), 1, "{seen:?}");
    assert_eq!(seen.holders[0].token, guard.token(), "{seen:?}");
    assert_eq!(
        seen.waiters,
        Some(1),
        "the later foreign node waits: {seen:?}"
    );
    guard.release().await.unwrap();
    raw.delete(&format!("/lockkit/orders/kazoo-uuid__lock__{later}"), None)
        .await
        .unwrap();
}
