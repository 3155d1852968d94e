//! An acquire in flight, run on a task of its own so that dropping the caller's
//! future never cuts a backend request in half.
//!
//! If the caller goes away, [`PendingAcquire`]'s drop fires the request's
//! [`Cancellation`] (the driver stops waiting) and, on a background task, waits for
//! the attempt already sent to finish before releasing whatever it was granted. A
//! release sent straight away could overtake the in-flight acquire on another
//! connection and leave a hold behind.

use std::sync::Arc;

use tokio::task::JoinHandle;

use super::guard::release_in_background;
use crate::driver::{AcquireRequest, Cancellation, Grant, LockDriver};
use crate::error::{LockError, Result};

pub(crate) struct PendingAcquire {
    task: Option<JoinHandle<Result<Grant>>>,
    cancel: Cancellation,
    driver: Arc<dyn LockDriver>,
    request: Arc<AcquireRequest>,
}

impl PendingAcquire {
    /// Starts `driver.acquire(request)` on its own task.
    pub(crate) fn start(
        driver: Arc<dyn LockDriver>,
        request: AcquireRequest,
        span: tracing::Span,
    ) -> Self {
        use tracing::Instrument;
        let request = Arc::new(request);
        let task = tokio::spawn({
            let (driver, request) = (driver.clone(), request.clone());
            async move { driver.acquire(&request).await }.instrument(span)
        });
        Self {
            task: Some(task),
            cancel: request.cancel.clone(),
            driver,
            request,
        }
    }

    /// Waits for the attempt to finish.
    pub(crate) async fn join(&mut self) -> Result<Grant> {
        let Some(task) = self.task.as_mut() else {
            return Err(LockError::Config("BUG: acquire joined twice".into()));
        };
        let result = task.await;
        self.task = None;
        result.unwrap_or_else(|e| {
            Err(LockError::Backend {
                driver: self.driver.name(),
                message: format!("the driver's acquire task failed: {e}"),
                source: None,
            })
        })
    }

    /// Releases, in the background, whatever the finished attempt may hold.
    pub(crate) fn release_later(&self) {
        release_in_background(
            self.driver.clone(),
            self.request.key.clone(),
            self.request.owner.clone(),
        );
    }
}

impl Drop for PendingAcquire {
    fn drop(&mut self) {
        let Some(task) = self.task.take() else {
            return;
        };
        self.cancel.cancel();
        let (driver, request) = (self.driver.clone(), self.request.clone());
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    if let Ok(Ok(grant)) = task.await {
                        tracing::debug!(key = %grant.key, "acquire finished after its caller left; releasing");
                        release_in_background(driver, request.key.clone(), request.owner.clone());
                    }
                });
            }
            Err(_) => task.abort(),
        }
    }
}
