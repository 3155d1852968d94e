//! An acquire in flight, which dropping the caller's future never cuts in half.
//!
//! The driver's acquire future is boxed and polled inline (no task, no thread hop on
//! the normal path). If the caller goes away, [`PendingAcquire`]'s drop fires the
//! request's [`Cancellation`] (the driver stops waiting) and moves the *same*
//! in-flight future to a background task, which lets the attempt already sent
//! finish and then releases whatever it was granted. A release sent straight away
//! could overtake the in-flight acquire on another connection and leave a hold
//! behind.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::time::Instant;

use super::release::{InFlight, Release, UnderWay};
use crate::driver::{AcquireRequest, Cancellation, Grant, LockDriver};
use crate::error::{LockError, Result};

pub(crate) struct PendingAcquire {
    attempt: Option<Pin<Box<dyn Future<Output = Result<Grant>> + Send>>>,
    cancel: Cancellation,
    driver: Arc<dyn LockDriver>,
    request: Arc<AcquireRequest>,
    /// Where a release of what the attempt may hold is marked under way.
    releases: Arc<InFlight>,
}

impl PendingAcquire {
    /// Prepares the engine's acquire of `request` on `driver`; it runs when [`join`](Self::join)ed.
    pub(crate) fn start(
        driver: Arc<dyn LockDriver>,
        releases: Arc<InFlight>,
        request: AcquireRequest,
        span: tracing::Span,
    ) -> Self {
        use tracing::Instrument;
        let request = Arc::new(request);
        let attempt = {
            let (driver, request) = (driver.clone(), request.clone());
            async move { crate::driver::acquire(&*driver, &request).await }.instrument(span)
        };
        Self {
            attempt: Some(Box::pin(attempt)),
            cancel: request.cancel.clone(),
            driver,
            request,
            releases,
        }
    }

    /// Drives the attempt to its end.
    pub(crate) async fn join(&mut self) -> Result<Grant> {
        let Some(attempt) = self.attempt.as_mut() else {
            return Err(LockError::Config("BUG: acquire joined twice".into()));
        };
        let result = attempt.await;
        self.attempt = None;
        result
    }

    /// Releases, in the background, whatever the finished attempt may hold.
    pub(crate) fn release_later(&self) {
        let under_way = self.releases.begin(&self.request.key, &self.request.owner);
        let deadline = Instant::now() + self.request.ttl;
        release_after_cancel(under_way, self.driver.clone(), &self.request, deadline);
    }
}

impl Drop for PendingAcquire {
    fn drop(&mut self) {
        let Some(attempt) = self.attempt.take() else {
            return;
        };
        self.cancel.cancel();
        let (driver, request) = (self.driver.clone(), self.request.clone());
        // Under way from now: the attempt may yet be granted.
        let under_way = self.releases.begin(&request.key, &request.owner);
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    if let Ok(grant) = attempt.await {
                        tracing::debug!(key = %grant.key, "acquire finished after its caller left; releasing");
                        release_after_cancel(under_way, driver, &request, grant.deadline);
                    }
                });
            }
            Err(_) => {
                tracing::warn!(key = %request.key, "no Tokio runtime to finish a dropped acquire on; any hold frees at its TTL");
            }
        }
    }
}

/// Releases, in the background, what an acquire whose caller left may hold,
/// until `deadline`, when such a hold's lease ends.
pub(super) fn release_after_cancel(
    under_way: Arc<UnderWay>,
    driver: Arc<dyn LockDriver>,
    request: &AcquireRequest,
    deadline: Instant,
) {
    let hold = (request.key.clone(), request.owner.clone());
    Release::new(under_way, driver, hold, deadline).in_background();
}
