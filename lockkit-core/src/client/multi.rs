//! [`MultiLockRequest`] and [`MultiLockGuard`]: several keys taken all or none.
//!
//! Where the backend can ([`crate::Capabilities::several_keys_at_once`], or
//! a Redis Cluster for keys of one slot), a request first tries every key in
//! one request, all or none (see [`super::at_once`]). Otherwise, or when a key is held, the keys are taken one
//! by one in one global order, the keys' byte order, so two requests for
//! overlapping sets, written in any order, never wait for each other in a
//! cycle: the one that holds the lowest shared key goes first. A key that cannot
//! be had within the wait releases the keys already taken before the error is
//! returned.

use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::time::Duration;

use futures_util::future::select_all;
use tokio::time::Instant;

use super::guard::LockGuard;
use super::hold::LostReason;
use super::locker::Locker;
use super::request::WaitSpec;
use crate::error::Result;
use crate::types::{FencingToken, LockKey, OwnerId, validate_ttl};

/// A request for exclusive locks on several keys at once, all or none; `.await`
/// it to acquire. Made by [`Locker::lock_all`].
///
/// # Cancel safety
///
/// Dropping the future leaves no hold behind: the keys taken so far are released
/// in the background, as a dropped [`LockGuard`] is.
#[must_use = "a lock request does nothing until it is awaited"]
#[derive(Debug)]
pub struct MultiLockRequest<'a> {
    locker: &'a Locker,
    keys: Vec<String>,
    ttl: Option<(Duration, bool)>,
    wait: WaitSpec,
    owner: Option<OwnerId>,
    fair: bool,
}

impl<'a> MultiLockRequest<'a> {
    pub(super) fn new(locker: &'a Locker, keys: Vec<String>) -> Self {
        Self {
            locker,
            keys,
            ttl: None,
            wait: WaitSpec::Forever,
            owner: None,
            fair: false,
        }
    }

    /// The lease the watchdog renews on every key, as [`LockRequest::ttl`](super::LockRequest::ttl).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some((ttl, false));
        self
    }

    /// A fixed lease on every key, counted from each key's request, as
    /// [`LockRequest::lease`](super::LockRequest::lease).
    pub fn lease(mut self, lease: Duration) -> Self {
        self.ttl = Some((lease, true));
        self
    }

    /// Waits at most `wait` in all, for every key together, then fails with
    /// [`crate::LockError::Timeout`] having released what it took.
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = WaitSpec::AtMost(wait);
        self
    }

    /// Waits as long as it takes (the default).
    pub fn wait_forever(mut self) -> Self {
        self.wait = WaitSpec::Forever;
        self
    }

    /// Does not wait: fails with [`crate::LockError::Contended`] if any key is
    /// held, having released what it took.
    pub fn no_wait(mut self) -> Self {
        self.wait = WaitSpec::NoWait;
        self
    }

    /// Waits for each key in arrival order, as [`LockRequest::fair`](super::LockRequest::fair).
    pub fn fair(mut self) -> Self {
        self.fair = true;
        self
    }

    /// Acquires every key as `owner` (by default one fresh owner for the set).
    pub fn owner(mut self, owner: OwnerId) -> Self {
        self.owner = Some(owner);
        self
    }

    async fn acquire(self) -> Result<MultiLockGuard> {
        // Every key is checked before any is taken.
        let mut keys = self
            .keys
            .into_iter()
            .map(LockKey::new)
            .collect::<Result<Vec<_>>>()?;
        keys.sort_unstable_by(|a, b| a.as_str().cmp(b.as_str()));
        keys.dedup_by(|a, b| a.as_str() == b.as_str());
        // A fresh owner holds none of the keys: where the backend can, all of
        // them in one request first (a driver that cannot says so without one).
        let at_once = keys.len() > 1 && !self.fair && self.owner.is_none();
        let owner = self.owner.unwrap_or_default();
        if at_once {
            let (ttl, fixed) = self.ttl.unwrap_or((self.locker.inner.default_ttl, false));
            let owner = owner.clone().with_clean_label(self.locker.label());
            let taken = self
                .locker
                .lock_all_at_once(&keys, &owner, validate_ttl(ttl)?, !fixed)
                .await?;
            if let Some(guards) = taken {
                return Ok(MultiLockGuard { guards });
            }
        }
        let deadline = match self.wait {
            WaitSpec::AtMost(d) => Instant::now().checked_add(d),
            WaitSpec::NoWait | WaitSpec::Forever => None,
        };
        let mut guards = Vec::with_capacity(keys.len());
        for key in keys {
            let mut request = self.locker.lock(key.as_str()).owner(owner.clone());
            if self.fair {
                request = request.fair();
            }
            request = match self.ttl {
                Some((ttl, false)) => request.ttl(ttl),
                Some((lease, true)) => request.lease(lease),
                None => request,
            };
            request = match (self.wait, deadline) {
                (WaitSpec::NoWait, _) => request.no_wait(),
                (_, Some(deadline)) => {
                    request.wait(deadline.saturating_duration_since(Instant::now()))
                }
                (_, None) => request.wait_forever(),
            };
            match request.await {
                Ok(guard) => guards.push(guard),
                Err(e) => {
                    release_all(guards).await;
                    return Err(e);
                }
            }
        }
        Ok(MultiLockGuard { guards })
    }
}

impl<'a> IntoFuture for MultiLockRequest<'a> {
    type Output = Result<MultiLockGuard>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<MultiLockGuard>> + Send + 'a>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.acquire())
    }
}

/// Releases `guards`, each in turn; a failure is logged (the lock is then freed
/// by its lease or session, as the release says).
async fn release_all(guards: Vec<LockGuard>) {
    for guard in guards {
        let key = guard.key().clone();
        if let Err(e) = guard.release().await {
            tracing::debug!(%key, error = %e, "releasing a key of an unfinished lock_all");
        }
    }
}

/// Exclusive locks on several keys, taken all or none by
/// [`Locker::lock_all`]: one [`LockGuard`] per key, in the keys' byte order.
///
/// Dropping it releases every key in the background.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use lockkit::{Locker, mem::MemDriver}; // `mem`: the `mem` feature
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), lockkit::LockError> {
/// let locker = Locker::new(Arc::new(MemDriver::new()));
/// // A transfer between two accounts: the same set in any order.
/// let both = locker.lock_all(["account-9", "account-2"]).await?;
/// assert_eq!(both.tokens().count(), 2);
/// let from = both.token("account-9").expect("one of the keys");
/// assert!(locker.try_lock("account-2").await.is_err());
/// both.release().await?;
/// # let _ = from; Ok(()) }
/// ```
#[must_use = "if unused the locks are released immediately"]
pub struct MultiLockGuard {
    guards: Vec<LockGuard>,
}

impl fmt::Debug for MultiLockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.guards).finish()
    }
}

impl MultiLockGuard {
    /// Each key's guard, in the keys' byte order.
    pub fn guards(&self) -> &[LockGuard] {
        &self.guards
    }

    /// Each key with its fencing token, in the keys' byte order.
    pub fn tokens(&self) -> impl Iterator<Item = (&LockKey, FencingToken)> {
        self.guards.iter().map(|g| (g.key(), g.token()))
    }

    /// The fencing token of `key`, if it is one of the set.
    pub fn token(&self, key: &str) -> Option<FencingToken> {
        self.guards
            .iter()
            .find(|g| g.key().as_str() == key)
            .map(LockGuard::token)
    }

    /// Whether any key's hold is known to be lost.
    pub fn is_lost(&self) -> bool {
        self.guards.iter().any(LockGuard::is_lost)
    }

    /// Resolves when any key's hold can no longer be trusted, with that key and
    /// why. As [`LockGuard::lost`], it is independent of the guard.
    pub fn lost(&self) -> impl Future<Output = (LockKey, LostReason)> + Send + 'static {
        let each: Vec<_> = self
            .guards
            .iter()
            .map(|g| {
                let (key, lost) = (g.key().clone(), g.lost());
                Box::pin(async move { (key, lost.await) })
            })
            .collect();
        async move {
            if each.is_empty() {
                return std::future::pending().await;
            }
            select_all(each).await.0
        }
    }

    /// Pushes every key's lease out to `ttl` from now.
    ///
    /// # Errors
    ///
    /// The first key's error, as [`LockGuard::extend`]; the keys after it are
    /// not extended.
    pub async fn extend(&self, ttl: Duration) -> Result<()> {
        for guard in &self.guards {
            guard.extend(ttl).await?;
        }
        Ok(())
    }

    /// Releases every key.
    ///
    /// # Errors
    ///
    /// The first error among the keys' releases, as [`LockGuard::release`]; every
    /// key is released either way.
    pub async fn release(self) -> Result<()> {
        let mut first = Ok(());
        for guard in self.guards {
            let released = guard.release().await;
            if first.is_ok() {
                first = released;
            }
        }
        first
    }
}
