//! Wake-ups: one pub/sub connection per driver, subscribed (once, at connect) to
//! the driver's own wake channel.
//!
//! A waiting acquire registers a [`Waiter`] here *before* its attempt, and the
//! attempt puts `"<driver id>:<waiter id>"` in the lock's waiters set on the
//! server. A release pops the oldest live entry and publishes the waiter id on that
//! driver's channel only, so one release wakes one waiter in one process — no herd,
//! and no SUBSCRIBE/UNSUBSCRIBE per wait. If the subscriber connection drops, it
//! reconnects with backoff and then wakes every waiter (they may have missed a
//! message); in between, waiters fall back to polling.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use lockkit_core::driver::WakeUpHealth;
use lockkit_core::sync::lock;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// With wake-ups working, how long a waiter waits before trying again anyway (a
/// lost message: invariant R6), which also refreshes its waiters entries: at most
/// this on a single server or Cluster, this on average with Redlock (its random
/// retry).
pub(crate) const NOTIFY_FALLBACK: Duration = Duration::from_secs(1);

/// How long a waiters entry lives without a refresh: a waiter that died is skipped
/// by releases after this (longer than the longest fallback wait).
pub(crate) const ENTRY_LIFETIME: Duration = Duration::from_secs(3);

type Routes = Arc<Mutex<HashMap<u64, Arc<Notify>>>>;

/// The driver's wake channel and its local waiters. The reader task ends with the
/// last driver clone.
#[derive(Debug)]
pub(crate) struct Subscriptions {
    driver_id: String,
    routes: Routes,
    next_waiter: AtomicU64,
    health: Arc<WakeUpHealth>,
    reader: JoinHandle<()>,
}

impl Drop for Subscriptions {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// One waiting acquire's registration; removed on drop.
#[derive(Debug)]
pub(crate) struct Waiter {
    /// Fires when a release names this waiter (or the subscriber reconnected).
    pub(crate) notify: Arc<Notify>,
    /// The entry in the lock's waiters set: `"<driver id>:<waiter id>"`.
    pub(crate) entry: String,
    id: u64,
    routes: Routes,
}

impl Drop for Waiter {
    fn drop(&mut self) {
        lock(&self.routes).remove(&self.id);
    }
}

fn wake_all(routes: &Routes) {
    for notify in lock(routes).values() {
        notify.notify_one();
    }
}

impl Subscriptions {
    /// Subscribes to `<wake_prefix><random driver id>` on the first of `clients`
    /// that answers, waiting for the server's confirmation; later reconnects rotate
    /// through `clients` (the seed nodes of a cluster, where PUBLISH reaches every
    /// node). `health` logs the connection's losses and returns.
    pub(crate) async fn connect(
        clients: Vec<redis::Client>,
        wake_prefix: &str,
        health: WakeUpHealth,
    ) -> redis::RedisResult<Arc<Self>> {
        let driver_id = lockkit_core::OwnerId::new().to_hex()[..16].to_string();
        let channel = format!("{wake_prefix}{driver_id}");
        let first = subscribe(&clients, 0, &channel).await?;
        let routes: Routes = Arc::default();
        let health = Arc::new(health);
        let reader = tokio::spawn(read(
            clients,
            channel,
            first,
            routes.clone(),
            health.clone(),
        ));
        Ok(Arc::new(Self {
            driver_id,
            routes,
            next_waiter: AtomicU64::new(1),
            health,
            reader,
        }))
    }

    /// Registers a waiter; a wake-up for it that arrives before it waits is kept.
    pub(crate) fn waiter(&self) -> Waiter {
        let id = self.next_waiter.fetch_add(1, Ordering::Relaxed);
        let notify = Arc::new(Notify::new());
        lock(&self.routes).insert(id, notify.clone());
        Waiter {
            notify,
            entry: format!("{}:{id}", self.driver_id),
            id,
            routes: self.routes.clone(),
        }
    }

    /// Whether the subscriber connection is up (else waiters poll faster).
    pub(crate) fn is_live(&self) -> bool {
        !self.health.is_down()
    }
}

/// A subscription: the stream of messages, and the sink that keeps it open.
type Stream = (redis::aio::PubSubSink, redis::aio::PubSubStream);

/// Subscribes on the first client (from `start`, rotating) that answers.
async fn subscribe(
    clients: &[redis::Client],
    start: usize,
    channel: &str,
) -> redis::RedisResult<Stream> {
    let mut last = None;
    for i in 0..clients.len() {
        let client = &clients[(start + i) % clients.len()];
        let attempt = async {
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(channel).await?;
            Ok::<_, redis::RedisError>(pubsub.split())
        };
        match tokio::time::timeout(Duration::from_secs(2), attempt).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => last = Some(e),
            Err(_) => {
                last = Some(redis::RedisError::from((
                    redis::ErrorKind::Io,
                    "pub/sub connect timed out",
                )))
            }
        }
    }
    Err(last.unwrap_or_else(|| {
        redis::RedisError::from((redis::ErrorKind::Client, "no Redis node to subscribe on"))
    }))
}

async fn read(
    clients: Vec<redis::Client>,
    channel: String,
    mut subscription: Stream,
    routes: Routes,
    health: Arc<WakeUpHealth>,
) {
    let mut rotation = 0;
    loop {
        while let Some(msg) = subscription.1.next().await {
            let id = std::str::from_utf8(msg.get_payload_bytes())
                .ok()
                .and_then(|s| s.parse::<u64>().ok());
            let notify = id.and_then(|id| {
                let routes = lock(&routes);
                routes.get(&id).cloned()
            });
            if let Some(notify) = notify {
                notify.notify_one();
            }
        }
        health.down(&"the connection closed");
        let mut backoff = Duration::from_millis(50);
        subscription = loop {
            tokio::time::sleep(backoff).await;
            rotation += 1;
            match subscribe(&clients, rotation, &channel).await {
                Ok(s) => break s,
                Err(e) => tracing::debug!(error = %e, "wake-up connection: not back yet"),
            }
            backoff = (backoff * 2).min(Duration::from_secs(2));
        };
        health.up();
        // Anything published while we were away is lost: let every waiter retry.
        wake_all(&routes);
    }
}
