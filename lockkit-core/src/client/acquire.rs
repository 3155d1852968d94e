//! How a [`Locker`] turns a [`LockRequest`] into a guard: reentrancy, the
//! cancel-safe acquire through the engine ([`crate::driver::acquire`]), the
//! deadline check, registration.

use tokio::time::Instant;

use super::guard::LockGuard;
use super::hold::Hold;
use super::locker::Locker;
use super::metrics::Labels;
use super::pending::PendingAcquire;
use super::request::LockRequest;
use crate::driver::{self, AcquireRequest, Admission, admit};
use crate::error::{LockError, Result};
use crate::types::{LockKey, OwnerId, validate_ttl};

impl Locker {
    pub(super) async fn acquire(&self, req: LockRequest<'_>) -> Result<LockGuard> {
        let key = LockKey::new(req.key)?;
        let ttl = validate_ttl(req.ttl.unwrap_or(self.inner.default_ttl))?;
        let owner = match req.owner {
            Some(owner) if owner.label().is_some() => owner,
            Some(owner) => owner.with_clean_label(self.label()),
            None => OwnerId::new().with_clean_label(self.label()),
        };
        let driver = &self.inner.driver;
        let mut request =
            AcquireRequest::new(key.clone(), owner, ttl, req.wait.start()).with_mode(req.mode);
        request.value = req.value;
        request.fair = req.fair;
        crate::wait::refuse_impossible(driver.name(), driver.capabilities(), &request)?;
        if let Some(guard) = self.reenter(&request)? {
            return Ok(guard);
        }
        // The owner's hold of the key may still be being released: the backend
        // would grant this as that hold, and the release then free it.
        self.inner
            .releases
            .wait_for(&key, &request.owner, &request.wait)
            .await?;

        let span = tracing::debug_span!(
            "lockkit.acquire",
            driver = driver.name(),
            %key,
            mode = %req.mode,
            ttl_ms = ttl.as_millis() as u64
        );
        let started = Instant::now();
        let labels = Labels::new(&self.inner, req.mode, &key);
        // From here on, dropping this future cancels the wait and releases whatever
        // the in-flight attempt is granted, after it lands (see `pending`).
        let releases = self.inner.releases.clone();
        let mut pending = PendingAcquire::start(driver.clone(), releases, request, span.clone());
        let joined = pending.join().await;
        // Never report "acquired" after the lease deadline.
        let late = matches!(&joined, Ok(grant) if Instant::now() >= grant.deadline);
        let granted = if late {
            Err(LockError::lost(
                &key,
                format!("the lease of {ttl:?} ran out before the grant arrived; use a longer TTL"),
            ))
        } else {
            joined
        };
        labels.acquired(started, &granted);
        let grant = match granted {
            Ok(grant) => grant,
            Err(e) => {
                // Unknown outcome (the backend may have granted it), or too late.
                if late || e.is_retryable() {
                    pending.release_later();
                }
                return Err(e);
            }
        };
        span.in_scope(|| {
            tracing::debug!(
                token = grant.token.get(),
                waited_ms = started.elapsed().as_millis() as u64,
                "acquired"
            )
        });
        let renew_ttl = (!req.fixed).then_some(ttl);
        let (hold, wake_watchdog) = self
            .inner
            .register(|| Hold::new(grant, ttl, renew_ttl, started, labels));
        if wake_watchdog {
            self.ensure_watchdog();
        }
        Ok(LockGuard::new(hold, self.inner.clone()))
    }

    /// Another guard on the owner's live hold of the key, if it has one that covers
    /// the request (the same mode, or a write hold for a read); an error if its
    /// hold can never cover it (an upgrade, another semaphore limit).
    fn reenter(&self, request: &AcquireRequest) -> Result<Option<LockGuard>> {
        let Some(hold) = self.inner.reenter(&request.key, &request.owner) else {
            return Ok(None);
        };
        let guard = LockGuard::new(hold.clone(), self.inner.clone());
        let held = driver::Hold {
            owner: request.owner.as_u128(),
            mode: hold.mode,
            token: hold.token,
        };
        match admit(self.inner.driver.name(), request, &[held], []) {
            Admission::Reenter(_) => {
                tracing::debug!(key = %request.key, count = hold.count(), "reentrant acquire");
                Ok(Some(guard))
            }
            // Dropping `guard` gives back the count `reenter` took.
            Admission::Refuse(e) => Err(e),
            Admission::Admit | Admission::Wait => Err(LockError::Config(format!(
                "BUG: the owner's own {} hold of `{}` neither covers nor refuses a {} request",
                hold.mode, request.key, request.mode
            ))),
        }
    }
}
