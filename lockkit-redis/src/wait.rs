//! Release notifications: one pub/sub connection per driver, subscribed to the
//! channels of keys that have waiters in this process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use redis::aio::PubSubSink;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

type Channels = Arc<Mutex<HashMap<String, (Arc<Notify>, usize)>>>;

/// The subscriber. Its reader task ends with the last driver clone.
#[derive(Debug)]
pub(crate) struct Subscriptions {
    sink: tokio::sync::Mutex<PubSubSink>,
    channels: Channels,
    reader: JoinHandle<()>,
}

impl Drop for Subscriptions {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Interest in one channel; unsubscribes when the last watcher leaves.
#[derive(Debug)]
pub(crate) struct Watch {
    pub(crate) notify: Arc<Notify>,
    channel: String,
    subs: Arc<Subscriptions>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        let last = {
            let mut channels = self.subs.channels.lock().unwrap_or_else(|e| e.into_inner());
            match channels.get_mut(&self.channel) {
                Some((_, n)) if *n > 1 => {
                    *n -= 1;
                    false
                }
                _ => {
                    channels.remove(&self.channel);
                    true
                }
            }
        };
        if last && let Ok(handle) = tokio::runtime::Handle::try_current() {
            let (subs, channel) = (self.subs.clone(), self.channel.clone());
            handle.spawn(async move {
                let _ = subs.sink.lock().await.unsubscribe(&channel).await;
            });
        }
    }
}

impl Subscriptions {
    pub(crate) async fn connect(client: &redis::Client) -> redis::RedisResult<Arc<Self>> {
        let (sink, mut stream) = client.get_async_pubsub().await?.split();
        let channels: Channels = Arc::default();
        let routes = channels.clone();
        let reader = tokio::spawn(async move {
            while let Some(msg) = stream.next().await {
                let name = msg.get_channel_name().to_string();
                let notify = {
                    let routes = routes.lock().unwrap_or_else(|e| e.into_inner());
                    routes.get(&name).map(|(n, _)| n.clone())
                };
                // One message wakes one waiter; a woken waiter that is gone passes
                // it on (tokio's Notify forwards notify_one permits).
                if let Some(notify) = notify {
                    notify.notify_one();
                }
            }
            tracing::debug!("pub/sub connection closed; waiters fall back to polling");
        });
        Ok(Arc::new(Self {
            sink: tokio::sync::Mutex::new(sink),
            channels,
            reader,
        }))
    }

    /// Registers interest in `channel`; the first watcher waits for the server's
    /// SUBSCRIBE confirmation, so a release after this returns is not missed.
    pub(crate) async fn watch(self: &Arc<Self>, channel: &str) -> redis::RedisResult<Watch> {
        let (notify, first) = {
            let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
            let entry = channels
                .entry(channel.to_string())
                .or_insert_with(|| (Arc::new(Notify::new()), 0));
            entry.1 += 1;
            (entry.0.clone(), entry.1 == 1)
        };
        let watch = Watch {
            notify,
            channel: channel.to_string(),
            subs: self.clone(),
        };
        if first {
            self.sink.lock().await.subscribe(channel).await?;
        }
        Ok(watch)
    }
}
