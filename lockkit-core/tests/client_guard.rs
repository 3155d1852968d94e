//! Client machinery that the conformance suite does not reach through a backend:
//! background release, deadline-based loss, late grants, watchdog batching.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lockkit_core::driver::{Attempt, Contender, Contention, acquire};
use lockkit_core::mem::MemDriver;
use lockkit_core::{
    AcquireRequest, Capabilities, LockDriver, LockError, LockKey, Locker, LossSignal, LostReason,
    OwnerId, Renewal, Result, async_trait,
};
use tokio::time::{Instant, timeout};

/// Wraps a driver: delays grants, counts renewal rounds and renewals.
#[derive(Debug, Default)]
struct Probe {
    inner: MemDriver,
    grant_delay: Option<Duration>,
    /// Attached to every grant, as a session-bound driver would.
    loss: Option<LossSignal>,
    rounds: AtomicUsize,
    renewals: AtomicUsize,
    /// Capabilities to claim instead of mem's.
    caps: Option<Capabilities>,
    /// How many releases fail with a backend error before one goes through.
    failing_releases: AtomicUsize,
    releases: AtomicUsize,
}

#[async_trait]
impl LockDriver for Probe {
    fn name(&self) -> &'static str {
        "probe"
    }
    fn capabilities(&self) -> Capabilities {
        self.caps.unwrap_or_else(|| self.inner.capabilities())
    }
    async fn contend<'a>(&'a self, req: &'a AcquireRequest) -> Result<Contention<'a>> {
        Ok(Contention::new(Probed { probe: self, req }))
    }
    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant> {
        self.inner.extend(key, owner, ttl).await
    }
    async fn extend_many(&self, renewals: &[Renewal]) -> Vec<Result<Instant>> {
        self.rounds.fetch_add(1, Ordering::SeqCst);
        self.renewals.fetch_add(renewals.len(), Ordering::SeqCst);
        self.inner.extend_many(renewals).await
    }
    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        self.releases.fetch_add(1, Ordering::SeqCst);
        let failing = self.failing_releases.load(Ordering::SeqCst);
        if failing > 0 {
            self.failing_releases.store(failing - 1, Ordering::SeqCst);
            return Err(LockError::Backend {
                driver: "probe",
                message: "the release statement failed".into(),
                source: None,
            });
        }
        self.inner.release(key, owner).await
    }
}

/// One acquire through a probe: mem's whole acquire as one attempt, then the
/// probe's delay and loss signal.
struct Probed<'a> {
    probe: &'a Probe,
    req: &'a AcquireRequest,
}

#[async_trait]
impl Contender for Probed<'_> {
    async fn attempt(&mut self) -> Result<Attempt> {
        let mut grant = acquire(&self.probe.inner, self.req).await?;
        if let Some(d) = self.probe.grant_delay {
            tokio::time::sleep(d).await;
        }
        if let Some(loss) = &self.probe.loss {
            grant = grant.with_loss_signal(loss.clone());
        }
        Ok(Attempt::Granted(grant))
    }
}

/// A probe whose first `failing` releases fail with a backend error.
fn failing_releases(failing: usize) -> Arc<Probe> {
    Arc::new(Probe {
        failing_releases: AtomicUsize::new(failing),
        ..Probe::default()
    })
}

#[tokio::test]
async fn a_failed_release_is_sent_again_until_it_succeeds() {
    let probe = failing_releases(2);
    let locker = Locker::new(probe.clone());
    let guard = locker.try_lock("k").await.unwrap();
    guard.release().await.unwrap();
    assert_eq!(probe.releases.load(Ordering::SeqCst), 3);
    let _free = locker.try_lock("k").await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_release_failing_until_the_lease_ends_says_so() {
    let probe = failing_releases(usize::MAX);
    let locker = Locker::new(probe.clone());
    let lease = Duration::from_secs(5);
    let guard = locker.lock("k").lease(lease).no_wait().await.unwrap();
    let deadline = guard.deadline();
    let err = guard.release().await.unwrap_err();
    let LockError::ReleaseFailed { attempts, .. } = &err else {
        panic!("expected ReleaseFailed, got {err:?}");
    };
    assert_eq!(probe.releases.load(Ordering::SeqCst), *attempts as usize);
    assert!(
        err.to_string().contains("freed when its lease ends"),
        "{err}"
    );
    assert!(
        err.to_string().contains("the release statement failed"),
        "{err}"
    );
    // Tried until one more try would land after the lease's end (the longest
    // pause, 1 s, spread by up to half), and not after it.
    let now = Instant::now();
    assert!(
        now + Duration::from_millis(1500) >= deadline,
        "gave up early: {err}"
    );
    assert!(now <= deadline, "tried past the lease: {err}");
    assert!(*attempts >= 6, "{err}");
}

#[tokio::test]
async fn a_release_that_finds_the_hold_gone_on_a_later_try_says_lost() {
    let probe = failing_releases(1);
    let (a, b) = (Locker::new(probe.clone()), Locker::new(probe.clone()));
    let guard = a
        .lock("k")
        .ttl(Duration::from_secs(30))
        .no_wait()
        .await
        .unwrap();
    let key = guard.key().clone();
    // The first try fails; before the second, the hold is broken and another
    // owner takes the key: the second finds the hold gone.
    let releasing = tokio::spawn(guard.release());
    let first_try = async {
        while probe.releases.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
    };
    timeout(Duration::from_secs(5), first_try).await.unwrap();
    assert!(probe.inner.force_release(&key).await.unwrap());
    let _taken = b.try_lock("k").await.unwrap();
    match releasing.await.unwrap() {
        Err(LockError::Lost { reason, .. }) => assert!(reason.contains("tried again"), "{reason}"),
        other => panic!("expected Lost, got {other:?}"),
    }
}

#[tokio::test]
async fn an_acquire_by_the_same_owner_waits_for_its_release_under_way() {
    let probe = failing_releases(3);
    let (a, b) = (Locker::new(probe.clone()), Locker::new(probe.clone()));
    let owner = OwnerId::new();
    let first = a.lock("k").owner(owner.clone()).no_wait().await.unwrap();
    drop(first);
    // The dropped guard's release fails three times and is tried again in the
    // background; the same owner's acquire must not be taken for that hold.
    let again = a
        .lock("k")
        .owner(owner.clone())
        .wait(Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(
        probe.releases.load(Ordering::SeqCst),
        4,
        "granted before the release ended"
    );
    // Held, and not freed by a late try of the old release.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(matches!(
        b.try_lock("k").await,
        Err(LockError::Contended { .. })
    ));
    assert_eq!(probe.releases.load(Ordering::SeqCst), 4);
    again.release().await.unwrap();
}

#[tokio::test]
async fn a_dropped_guard_whose_release_fails_is_released_on_a_later_try() {
    let probe = failing_releases(2);
    let (a, b) = (Locker::new(probe.clone()), Locker::new(probe.clone()));
    let guard = a
        .lock("k")
        .ttl(Duration::from_secs(30))
        .no_wait()
        .await
        .unwrap();
    drop(guard);
    // Freed well before its 30 s lease would have freed it.
    let _held = b.lock("k").wait(Duration::from_secs(10)).await.unwrap();
    assert_eq!(probe.releases.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn dropping_a_guard_releases_in_the_background() {
    let driver = Arc::new(MemDriver::new());
    let (a, b) = (Locker::new(driver.clone()), Locker::new(driver));
    let g = a.try_lock("k").await.unwrap();
    drop(g);
    let started = Instant::now();
    let _held = b.lock("k").wait(Duration::from_secs(2)).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test]
async fn lost_fires_at_the_fixed_lease_deadline() {
    let locker = Locker::new(Arc::new(MemDriver::new()));
    let requested = Instant::now();
    let g = locker
        .lock("k")
        .lease(Duration::from_millis(100))
        .await
        .unwrap();
    let reason = timeout(Duration::from_secs(2), g.lost()).await.unwrap();
    assert_eq!(reason, LostReason::Expired);
    assert!(requested.elapsed() >= Duration::from_millis(100));
    assert!(Instant::now() >= g.deadline());
    assert!(g.is_lost());
    assert!(matches!(
        g.extend(Duration::from_secs(1)).await,
        Err(LockError::Lost { .. })
    ));
}

#[tokio::test]
async fn a_grant_arriving_after_its_deadline_is_refused_and_released() {
    let slow = Arc::new(Probe {
        grant_delay: Some(Duration::from_millis(150)),
        ..Probe::default()
    });
    let locker = Locker::new(slow.clone());
    let err = locker
        .lock("k")
        .lease(Duration::from_millis(100))
        .await
        .unwrap_err();
    assert!(matches!(err, LockError::Lost { .. }), "{err}");
    // The refused hold was released (well before the 100 ms lease would matter, the
    // row is free for a new owner with a long lease).
    let other = Locker::new(Arc::new(Probe {
        inner: slow.inner.clone(),
        ..Probe::default()
    }));
    let _held = other.lock("k").wait(Duration::from_secs(2)).await.unwrap();
}

/// On tokio's paused clock: every watchdog round comes exactly when it is due, so
/// the rounds in one second are counted, not estimated.
#[tokio::test(start_paused = true)]
async fn watchdog_renews_every_hold_in_one_call_per_round() {
    let probe = Arc::new(Probe::default());
    let locker = Locker::new(probe.clone());
    let ttl = Duration::from_millis(300);
    let mut guards = Vec::new();
    for i in 0..50 {
        guards.push(
            locker
                .lock(format!("k{i}"))
                .ttl(ttl)
                .no_wait()
                .await
                .unwrap(),
        );
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rounds = probe.rounds.load(Ordering::SeqCst);
    let renewals = probe.renewals.load(Ordering::SeqCst);
    // A round every ttl/3 = 100 ms, each renewing all 50 holds in one call.
    assert!((9..=10).contains(&rounds), "{rounds} rounds");
    assert_eq!(
        renewals,
        rounds * 50,
        "{renewals} renewals in {rounds} rounds"
    );
    assert!(guards.iter().all(|g| !g.is_lost()));
    for g in guards {
        g.release().await.unwrap();
    }
    let after_release = probe.renewals.load(Ordering::SeqCst);
    // Three more rounds' worth of time: nothing is renewed once released.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        probe.renewals.load(Ordering::SeqCst),
        after_release,
        "renewed after release"
    );
}

#[tokio::test]
async fn reentrant_hold_is_released_with_the_last_guard() {
    let driver = Arc::new(MemDriver::new());
    let (a, b) = (Locker::new(driver.clone()), Locker::new(driver));
    let owner = OwnerId::new();
    let g1 = a.lock("k").owner(owner.clone()).no_wait().await.unwrap();
    let g2 = a.lock("k").owner(owner.clone()).no_wait().await.unwrap();
    drop(g1);
    assert_eq!(g2.hold_count(), 1);
    assert!(matches!(
        b.try_lock("k").await,
        Err(LockError::Contended { .. })
    ));
    drop(g2);
    let _held = b.lock("k").wait(Duration::from_secs(2)).await.unwrap();
}

#[tokio::test]
async fn debug_output_shows_no_full_owner_id() {
    let owner = OwnerId::new();
    let locker = Locker::new(Arc::new(MemDriver::new()));
    let g = locker
        .lock("k")
        .owner(owner.clone())
        .no_wait()
        .await
        .unwrap();
    let shown = format!("{g:?} {owner} {owner:?} {locker:?}");
    assert!(!shown.contains(&owner.to_hex()), "{shown}");
}

#[tokio::test]
async fn a_fired_loss_signal_makes_lost_fire_at_once() {
    let session = LossSignal::new();
    let probe = Probe {
        loss: Some(session.clone()),
        ..Probe::default()
    };
    let locker = Locker::new(Arc::new(probe));
    let guard = locker.lock("session-bound").await.unwrap();
    let lost = guard.lost();
    assert!(!guard.is_lost());
    let fired = Instant::now();
    session.fire("session disconnected");
    let reason = timeout(Duration::from_secs(5), lost).await.unwrap();
    assert_eq!(
        reason,
        LostReason::SessionEnded("session disconnected".into())
    );
    // Far sooner than the 30 s lease or a watchdog round (10 s).
    assert!(
        fired.elapsed() < Duration::from_secs(1),
        "{:?}",
        fired.elapsed()
    );
    assert!(guard.is_lost());
    assert!(matches!(
        guard.extend(Duration::from_secs(5)).await,
        Err(LockError::Lost { .. })
    ));
}

#[tokio::test]
async fn modes_a_driver_lacks_are_refused_naming_the_mode_and_the_driver() {
    let exclusive_only = Probe {
        caps: Some(Capabilities::baseline()),
        ..Probe::default()
    };
    let locker = Locker::new(Arc::new(exclusive_only));
    let read = locker.read_lock("rw").no_wait().await.unwrap_err();
    let permit = locker.semaphore("rw", 3).try_acquire().await.unwrap_err();
    for (e, mode) in [(read, "shared"), (permit, "permits")] {
        assert!(matches!(e, LockError::Unsupported { .. }), "{e:?}");
        let text = e.to_string();
        assert!(text.contains("probe") && text.contains(mode), "{text}");
    }
    // The write lock is the exclusive lock: every driver has it.
    let w = locker.write_lock("rw").no_wait().await.unwrap();
    assert!(locker.try_lock("rw").await.is_err());
    w.release().await.unwrap();
}

#[tokio::test]
async fn a_mode_a_driver_lacks_is_refused_even_to_the_owner_of_a_write_hold() {
    let exclusive_only = Probe {
        caps: Some(Capabilities::baseline()),
        ..Probe::default()
    };
    let locker = Locker::new(Arc::new(exclusive_only));
    let owner = OwnerId::new();
    let w = locker
        .write_lock("rw")
        .owner(owner.clone())
        .no_wait()
        .await
        .unwrap();
    // A write hold covers a read where the driver has read locks; here it has
    // none, and the answer does not depend on what the owner holds.
    let e = locker
        .read_lock("rw")
        .owner(owner)
        .no_wait()
        .await
        .unwrap_err();
    assert!(matches!(e, LockError::Unsupported { .. }), "{e:?}");
    w.release().await.unwrap();
}

#[tokio::test]
async fn a_semaphore_of_zero_permits_is_a_config_error() {
    let locker = Locker::new(Arc::new(MemDriver::new()));
    let e = locker.semaphore("none", 0).try_acquire().await.unwrap_err();
    assert!(matches!(e, LockError::Config(_)), "{e:?}");
}
