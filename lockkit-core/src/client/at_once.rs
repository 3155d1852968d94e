//! Several keys in one request to the backend: the first try of
//! [`Locker::lock_all`], asked of every driver
//! ([`crate::LockDriver::try_acquire_all`]; one that cannot answers at once,
//! with no request). A refusal leaves nothing held, and the request then takes
//! the keys one by one.
//!
//! Dropping the caller's future never cuts the attempt in half: as a single
//! acquire's ([`super::pending`]), the attempt in flight moves to a background
//! task, which releases every key it was granted.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::guard::LockGuard;
use super::hold::Hold;
use super::locker::Locker;
use super::metrics::Labels;
use super::pending::release_after_cancel;
use super::release::InFlight;
use crate::driver::{AcquireRequest, Grant, LockDriver, LockMode, Wait};
use crate::error::{LockError, Result};
use crate::types::{LockKey, OwnerId};

type Attempt = Pin<Box<dyn Future<Output = Result<Option<Vec<Grant>>>> + Send>>;

impl Locker {
    /// Exclusive holds of `keys` (distinct, in order) for the fresh `owner`, in one
    /// request: the guards, or `None` if any key is held (then none is).
    /// `ttl` is each hold's lease; `renew` whether the watchdog renews it.
    pub(super) async fn lock_all_at_once(
        &self,
        keys: &[LockKey],
        owner: &OwnerId,
        ttl: Duration,
        renew: bool,
    ) -> Result<Option<Vec<LockGuard>>> {
        let reqs: Vec<AcquireRequest> = keys
            .iter()
            .map(|key| AcquireRequest::new(key.clone(), owner.clone(), ttl, Wait::NoWait))
            .collect();
        let started = Instant::now();
        let mut pending = PendingAll::start(self.inner.driver.clone(), &self.inner.releases, reqs);
        let grants = match pending.join().await {
            Ok(Some(grants)) => grants,
            Ok(None) | Err(LockError::Unsupported { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        // Never report "acquired" after a lease deadline.
        if grants.iter().any(|g| Instant::now() >= g.deadline) {
            pending.release_later(&grants);
            return Err(LockError::lost(
                &keys[0],
                format!("the lease of {ttl:?} ran out before the grants arrived; use a longer TTL"),
            ));
        }
        let mut guards = Vec::with_capacity(grants.len());
        for grant in grants {
            let labels = Labels::new(&self.inner, LockMode::Exclusive, &grant.key);
            labels.acquired(started, &Ok(()));
            let renew_ttl = renew.then_some(ttl);
            let (hold, wake_watchdog) = self
                .inner
                .register(|| Hold::new(grant, ttl, renew_ttl, started, labels));
            if wake_watchdog {
                self.ensure_watchdog();
            }
            guards.push(LockGuard::new(hold, self.inner.clone()));
        }
        Ok(Some(guards))
    }
}

/// A [`LockDriver::try_acquire_all`] in flight.
struct PendingAll {
    attempt: Option<Attempt>,
    driver: Arc<dyn LockDriver>,
    releases: Arc<InFlight>,
    reqs: Arc<Vec<AcquireRequest>>,
}

impl PendingAll {
    fn start(
        driver: Arc<dyn LockDriver>,
        releases: &Arc<InFlight>,
        reqs: Vec<AcquireRequest>,
    ) -> Self {
        let reqs = Arc::new(reqs);
        let attempt = {
            let (driver, reqs) = (driver.clone(), reqs.clone());
            async move { driver.try_acquire_all(&reqs).await }
        };
        Self {
            attempt: Some(Box::pin(attempt)),
            driver,
            releases: releases.clone(),
            reqs,
        }
    }

    /// Drives the attempt to its end. An error leaves the keys to release in
    /// the background: the backend may have granted some.
    async fn join(&mut self) -> Result<Option<Vec<Grant>>> {
        let Some(attempt) = self.attempt.as_mut() else {
            return Err(LockError::Config("BUG: lock_all joined twice".into()));
        };
        let result = attempt.await;
        self.attempt = None;
        if let Err(e) = &result
            && e.is_retryable()
        {
            for req in self.reqs.iter() {
                let under_way = self.releases.begin(&req.key, &req.owner);
                release_after_cancel(
                    under_way,
                    self.driver.clone(),
                    req,
                    Instant::now() + req.ttl,
                );
            }
        }
        result
    }

    /// Releases `grants` in the background.
    fn release_later(&self, grants: &[Grant]) {
        for (grant, req) in grants.iter().zip(self.reqs.iter()) {
            let under_way = self.releases.begin(&req.key, &req.owner);
            release_after_cancel(under_way, self.driver.clone(), req, grant.deadline);
        }
    }
}

impl Drop for PendingAll {
    fn drop(&mut self) {
        let Some(attempt) = self.attempt.take() else {
            return;
        };
        let (driver, reqs) = (self.driver.clone(), self.reqs.clone());
        // Under way from now: the attempt may yet be granted.
        let under_way: Vec<_> = reqs
            .iter()
            .map(|req| self.releases.begin(&req.key, &req.owner))
            .collect();
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    if let Ok(Some(grants)) = attempt.await {
                        tracing::debug!("lock_all finished after its caller left; releasing");
                        for ((grant, req), under_way) in
                            grants.iter().zip(reqs.iter()).zip(under_way)
                        {
                            release_after_cancel(under_way, driver.clone(), req, grant.deadline);
                        }
                    }
                });
            }
            Err(_) => {
                tracing::warn!(
                    "no Tokio runtime to finish a dropped lock_all on; any hold frees at its TTL"
                );
            }
        }
    }
}
