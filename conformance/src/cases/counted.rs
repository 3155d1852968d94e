//! [`Counted`]: a driver that forwards everything to another and counts the
//! inspections it has answered, so that a case can wait until an observer has
//! made its reading (the state it needs) instead of sleeping.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lockkit_core::driver::{ChangeSignal, Contention};
use lockkit_core::{
    AcquireRequest, Capabilities, Inspection, LockDriver, LockKey, OwnerId, Renewal, Result,
    async_trait,
};
use tokio::time::Instant;

/// Forwards to `inner`; counts finished inspections.
#[derive(Debug)]
pub(crate) struct Counted {
    inner: Arc<dyn LockDriver>,
    inspections: AtomicUsize,
}

impl Counted {
    pub(crate) fn new(inner: Arc<dyn LockDriver>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            inspections: AtomicUsize::new(0),
        })
    }

    /// How many inspections have returned.
    pub(crate) fn inspections(&self) -> usize {
        self.inspections.load(Ordering::SeqCst)
    }

    /// Waits (at most `limit`) until `n` inspections have returned.
    pub(crate) async fn until_inspected(&self, n: usize, limit: Duration) -> bool {
        let end = Instant::now() + limit;
        while self.inspections() < n {
            if Instant::now() >= end {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        true
    }
}

#[async_trait]
impl LockDriver for Counted {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }
    async fn contend<'a>(&'a self, req: &'a AcquireRequest) -> Result<Contention<'a>> {
        self.inner.contend(req).await
    }
    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant> {
        self.inner.extend(key, owner, ttl).await
    }
    async fn extend_many(&self, renewals: &[Renewal]) -> Vec<Result<Instant>> {
        self.inner.extend_many(renewals).await
    }
    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool> {
        self.inner.release(key, owner).await
    }
    async fn inspect(&self, key: &LockKey) -> Result<Inspection> {
        let seen = self.inner.inspect(key).await;
        self.inspections.fetch_add(1, Ordering::SeqCst);
        seen
    }
    async fn watch(&self, key: &LockKey) -> Result<ChangeSignal> {
        self.inner.watch(key).await
    }
    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        self.inner.force_release(key).await
    }
    async fn purge(&self, key: &LockKey) -> Result<()> {
        self.inner.purge(key).await
    }
}
