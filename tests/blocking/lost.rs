//! The lost signal, waited on by a thread: holds really lost (broken by an
//! operator, or a fixed lease run out) and holds that stay good.

use std::sync::mpsc::{RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use lockkit::{LockError, LockKey, LostReason};

use super::{locker, url};

/// Long enough never to run out in a test that passes.
const PATIENCE: Duration = Duration::from_secs(30);

/// Frees `key` whoever holds it, as `lockkit break` does, from another
/// connection; says whether someone held it.
fn break_lock(dir: &tempfile::TempDir, key: &str) -> bool {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let admin = lockkit::connect(&url(dir)).await.unwrap();
        let key = LockKey::new(key).unwrap();
        admin.driver().force_release(&key).await.unwrap()
    })
}

/// How long a hold whose lease is renewed every 200 ms may take to learn of its
/// loss: one renewal, and a busy machine's slack.
const PROMPT: Duration = Duration::from_secs(5);

#[test]
fn wait_lost_returns_promptly_after_a_break_and_the_receiver_gets_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let a = locker(&dir).with_ttl(Duration::from_millis(600));
    let guard = a.lock("orders").unwrap();
    let lost = guard.lost();
    assert!(break_lock(&dir, "orders"));

    let broke = Instant::now();
    let reason = guard.wait_lost(PATIENCE).unwrap();
    let took = broke.elapsed();
    assert_eq!(reason, Some(LostReason::Gone));
    assert!(took < PROMPT, "learnt of the loss after {took:?}");
    assert!(guard.is_lost());
    assert_eq!(lost.recv_timeout(PATIENCE), Ok(LostReason::Gone));
    // Already lost: no wait at all.
    assert_eq!(guard.wait_lost(PATIENCE).unwrap(), Some(LostReason::Gone));
    assert!(matches!(guard.release(), Err(LockError::Lost { .. })));
}

#[test]
fn wait_lost_returns_none_after_its_timeout_when_nothing_happened() {
    let dir = tempfile::tempdir().unwrap();
    let a = locker(&dir).with_ttl(Duration::from_millis(600));
    let guard = a.lock("orders").unwrap();
    let lost = guard.lost();
    let timeout = Duration::from_millis(300);
    let started = Instant::now();
    assert_eq!(guard.wait_lost(timeout).unwrap(), None);
    let took = started.elapsed();
    assert!(took >= timeout - Duration::from_millis(20), "{took:?}");
    assert!(took < timeout + PROMPT, "{took:?}");
    // Renewed meanwhile, and still good.
    assert!(!guard.is_lost());
    assert_eq!(lost.try_recv(), Err(TryRecvError::Empty));

    // Released without a loss: the receiver is disconnected, with no reason.
    guard.release().unwrap();
    assert_eq!(
        lost.recv_timeout(PATIENCE),
        Err(RecvTimeoutError::Disconnected)
    );
}

#[test]
fn a_fixed_lease_that_runs_out_is_lost_as_expired() {
    let dir = tempfile::tempdir().unwrap();
    let a = locker(&dir);
    let lease = Duration::from_millis(200);
    let started = Instant::now();
    let guard = a.lock_request("report").lease(lease).acquire().unwrap();
    assert_eq!(
        guard.wait_lost(PATIENCE).unwrap(),
        Some(LostReason::Expired)
    );
    let took = started.elapsed();
    assert!(took >= lease - Duration::from_millis(20), "{took:?}");
    assert!(took < lease + PROMPT, "{took:?}");
}

#[test]
fn a_broken_leadership_is_lost_and_its_receiver_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let a = locker(&dir).with_ttl(Duration::from_millis(600));
    let leading = a.election("scheduler").campaign("node-a").unwrap();
    let lost = leading.lost();
    assert_eq!(leading.wait_lost(Duration::from_millis(50)).unwrap(), None);
    assert!(break_lock(&dir, "scheduler"));

    let broke = Instant::now();
    assert_eq!(lost.recv_timeout(PATIENCE), Ok(LostReason::Gone));
    assert!(broke.elapsed() < PROMPT, "{:?}", broke.elapsed());
    assert!(leading.is_lost());
    assert_eq!(leading.wait_lost(PATIENCE).unwrap(), Some(LostReason::Gone));
    assert!(matches!(leading.resign(), Err(LockError::Lost { .. })));
}
