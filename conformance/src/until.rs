//! Bounded waits for the state a test needs next: what tests do instead of
//! sleeping and hoping. [`until_waiters`](crate::until_waiters) is the one for a
//! queue of waiters.

use std::future::Future;
use std::time::Duration;

use lockkit_core::LockError;
use tokio::time::Instant;

/// How often [`until`] looks.
const EVERY: Duration = Duration::from_millis(10);

/// How often [`until_ok`] tries: a failover's pace, not a statement's.
const RETRY_EVERY: Duration = Duration::from_millis(50);

/// Looks at `check` every 10 ms until it holds, for at most `within`.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::time::Duration;
///
/// let looks = AtomicUsize::new(0);
/// lockkit_conformance::until("a third look", Duration::from_secs(5), || async {
///     looks.fetch_add(1, Ordering::Relaxed) == 2
/// })
/// .await
/// .unwrap();
/// assert_eq!(looks.load(Ordering::Relaxed), 3);
/// # }
/// ```
///
/// # Errors
///
/// [`LockError::Config`] naming `what`, if it never held.
pub async fn until<F, Fut>(what: &str, within: Duration, mut check: F) -> Result<(), LockError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    while !check().await {
        if Instant::now() >= deadline {
            return Err(LockError::Config(format!(
                "never saw within {within:?}: {what}"
            )));
        }
        tokio::time::sleep(EVERY).await;
    }
    Ok(())
}

/// Runs `f` every 50 ms until it succeeds, for at most `within`: the time a
/// driver may take to follow a failover.
///
/// # Errors
///
/// `f`'s last error, if it never succeeded.
pub async fn until_ok<T, F, Fut>(within: Duration, mut f: F) -> Result<T, LockError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, LockError>>,
{
    let deadline = Instant::now() + within;
    loop {
        match f().await {
            Err(_) if Instant::now() < deadline => tokio::time::sleep(RETRY_EVERY).await,
            done => return done,
        }
    }
}
