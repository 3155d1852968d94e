//! Change signals for election observers: [`ChangeSignal`], armed by
//! [`crate::LockDriver::watch`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::Notify;

/// Resolves once a key's holders may have changed since it was armed.
pub type ChangeSignal = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// A signal on the next `notify_waiters` of `notify`, registered before this
/// returns: a driver whose releases (or grants) notify waiters arms with it.
pub fn armed(notify: Arc<Notify>) -> ChangeSignal {
    let mut notified = Box::pin(notify.notified_owned());
    notified.as_mut().enable();
    Box::pin(notified)
}
