//! A change signal for election observers: a watch on the key's queue prefix,
//! acknowledged before the signal is returned (so it sees every later event),
//! which fires at its first event: any grant, release or new value.

use etcd_client::WatchOptions;
use lockkit_core::driver::ChangeSignal;
use lockkit_core::{LockKey, Result};

use super::connection::Inner;
use super::keys;
use super::request::within;

/// Arms a signal on the next change under `key`'s queue.
pub(crate) async fn watch(inner: &Inner, key: &LockKey) -> Result<ChangeSignal> {
    let prefix = keys::queue(&inner.prefix, key);
    let mut client = inner.client.clone();
    let watching = client.watch(prefix, Some(WatchOptions::new().with_prefix()));
    let mut stream = within(inner.timeouts.request, "watch", watching).await?;
    // The first message acknowledges the watch: from here on, no event is missed.
    let created = within(inner.timeouts.request, "watch", stream.message()).await?;
    let early = created.is_none_or(|r| !r.events().is_empty() || r.canceled());
    Ok(Box::pin(async move {
        if early {
            return;
        }
        // Any message after the acknowledgement (events, cancellation), an
        // error or the stream's end: something may have changed.
        while let Ok(Some(resp)) = stream.message().await {
            if !resp.events().is_empty() || resp.canceled() {
                return;
            }
        }
    }))
}
