use std::time::Duration;

use super::*;
use crate::driver::{LockMode, Wait, acquire};

#[test]
fn urls_name_stores() {
    assert_eq!(parse_url("mem://").unwrap(), "");
    assert_eq!(parse_url("mem://orders").unwrap(), "orders");
    assert!(matches!(
        parse_url("mem://a/b"),
        Err(LockError::InvalidUrl { .. })
    ));
    assert!(matches!(
        parse_url("memx://"),
        Err(LockError::InvalidUrl { .. })
    ));
    assert_eq!(parse_url("MEM://orders").unwrap(), "orders");
    let e = parse_url("mem://orders?prefix=x").unwrap_err().to_string();
    assert!(e.contains("unknown option `prefix`"), "{e}");
}

fn req(mode: LockMode, wait: Wait) -> AcquireRequest {
    let key = LockKey::new("k").unwrap();
    AcquireRequest::new(key, OwnerId::new(), Duration::from_secs(5), wait).with_mode(mode)
}

#[tokio::test]
async fn a_dropped_wait_leaves_the_queue_and_lets_the_next_in() {
    let mem = MemDriver::new();
    let held = acquire(&mem, &req(LockMode::Exclusive, Wait::NoWait))
        .await
        .unwrap();
    let first = req(LockMode::Exclusive, Wait::Forever);
    let waiting = {
        let mem = mem.clone();
        let first = first.clone();
        tokio::spawn(async move { acquire(&mem, &first).await })
    };
    let queued = |n| {
        let mem = mem.clone();
        async move {
            for _ in 0..1000 {
                if mem
                    .inspect(&LockKey::new("k").unwrap())
                    .await
                    .unwrap()
                    .waiters
                    == Some(n)
                {
                    return;
                }
                tokio::task::yield_now().await;
            }
            panic!("the queue never reached {n}");
        }
    };
    queued(1).await;
    waiting.abort();
    assert!(waiting.await.unwrap_err().is_cancelled());
    queued(0).await;
    mem.release(&held.key, &held.owner).await.unwrap();
    let next = acquire(&mem, &req(LockMode::Exclusive, Wait::NoWait))
        .await
        .unwrap();
    assert!(next.token > held.token);
}

#[tokio::test]
async fn inspection_shows_each_holder_with_its_label_and_lease() {
    let mem = MemDriver::new();
    let mut a = req(LockMode::Shared, Wait::NoWait);
    a.owner = OwnerId::new().with_label("reader-a");
    acquire(&mem, &a).await.unwrap();
    acquire(&mem, &req(LockMode::Shared, Wait::NoWait))
        .await
        .unwrap();
    let seen = mem.inspect(&a.key).await.unwrap();
    assert_eq!(seen.holders.len(), 2);
    assert!(seen.holders.iter().all(|h| h.mode == LockMode::Shared));
    assert_eq!(seen.holders[0].label.as_deref(), Some("reader-a"));
    let left = seen.holders[0].remaining.unwrap();
    assert!(
        left <= Duration::from_secs(5) && left > Duration::from_secs(4),
        "{left:?}"
    );
    assert_eq!(seen.waiters, Some(0));
}
