//! Waiting for waiters to queue, as a backend shows them: what drivers' tests do
//! before they release, so that no test sleeps and hopes.

use std::time::Duration;

use lockkit_core::{LockError, Locker};
use tokio::time::Instant;

/// Waits until `observer` inspects `key` with exactly `count` waiters, looking
/// every 10 ms for at most `within`.
///
/// # Errors
///
/// [`LockError::Config`] naming the count and the last inspection if they never
/// showed; an inspection's own error.
pub async fn until_waiters(
    observer: &Locker,
    key: &str,
    count: usize,
    within: Duration,
) -> Result<(), LockError> {
    let deadline = Instant::now() + within;
    loop {
        let seen = observer.inspect(key).await?;
        if seen.waiters == Some(count) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(LockError::Config(format!(
                "`{key}` never showed {count} waiters within {within:?}; last seen: {seen:?}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
