//! Whether two lockers reach the same locks: what a driver's constructor tests
//! check when one locker is built on the application's client and the other from
//! a URL.

use std::time::Duration;

use lockkit_core::{LockError, Locker};

/// Checks that `a` and `b` take the same lock `key`: while `a` holds it, `b`'s
/// try is refused; a waiter of `b` is granted once `a` releases, with a higher
/// fencing token; then `a`'s try is refused until `b` releases. Waits at most
/// `within` for the hand-off.
///
/// # Errors
///
/// [`LockError::Config`] saying which step failed; a backend error as it came.
pub async fn exclude_each_other(
    a: &Locker,
    b: &Locker,
    key: &str,
    within: Duration,
) -> Result<(), LockError> {
    let failed = |what: String| Err(LockError::Config(format!("`{key}`: {what}")));
    let first = a.try_lock(key).await?;
    match b.try_lock(key).await {
        Err(LockError::Contended { .. }) => {}
        other => return failed(format!("granted to both lockers at once: {other:?}")),
    }
    let waiter = {
        let (b, key) = (b.clone(), key.to_owned());
        tokio::spawn(async move { b.lock(key).wait(within).await })
    };
    let first_token = first.token();
    first.release().await?;
    let second = match waiter.await {
        Ok(granted) => granted?,
        Err(e) => return failed(format!("the waiter's task failed: {e}")),
    };
    if second.token() <= first_token {
        return failed(format!(
            "the hand-off's token {} is not above the first holder's {}",
            second.token().get(),
            first_token.get()
        ));
    }
    match a.try_lock(key).await {
        Err(LockError::Contended { .. }) => {}
        other => return failed(format!("granted back while the other held: {other:?}")),
    }
    second.release().await
}
