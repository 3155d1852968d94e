//! [`LockDriver`]: the object-safe async trait each backend implements.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;

use super::capabilities::Capabilities;
use super::change::ChangeSignal;
use super::grant::{Grant, Renewal};
use super::inspect::Inspection;
use super::request::AcquireRequest;
use crate::error::{LockError, Result};
use crate::types::{LockKey, OwnerId};
use crate::wait::Contention;

/// The object-safe async trait each backend implements.
///
/// Rules every implementation keeps:
/// - an attempt of [`contend`](Self::contend)'s contender is atomic: a hold is
///   granted only if the key's holders leave room for the request's
///   [`crate::LockMode`] — or `req.owner` already holds it, in which case the
///   same token is returned and the lease refreshed (this makes retries after an
///   unknown outcome safe).
/// - every grant carries a fencing token, strictly increasing per key across every
///   grant of that key, whatever its mode.
/// - a grant's [`deadline`](super::Grant::deadline) is measured from before the
///   request was sent.
/// - `extend` and `release` act only on a hold owned by `owner`; they never touch
///   another owner's hold. `extend` of a hold that is gone returns
///   [`LockError::Lost`].
/// - the driver never waits and never checks a request's mode: the engine
///   ([`crate::driver::acquire`]) refuses a mode missing from the driver's
///   [`Capabilities`] before it asks the driver to contend, and owns the wait
///   (its deadline, cancellation, the fallback poll), waking on the backend
///   signal the contender arms.
#[async_trait]
pub trait LockDriver: Send + Sync + fmt::Debug + 'static {
    /// A short name for messages and reports (`"sqlite"`, `"mem"`).
    fn name(&self) -> &'static str;

    /// What this driver supports.
    fn capabilities(&self) -> Capabilities;

    /// The driver's side of one acquire of `req`, in a mode the driver supports:
    /// the [`Contender`](crate::driver::Contender) whose attempts the engine makes, and how it paces them
    /// ([`Contention`]). Checks that need no round trip (the key's form, the
    /// owner's own hold) belong here; everything that asks the backend belongs
    /// in the attempts.
    ///
    /// # Errors
    ///
    /// A request this driver can never grant: [`LockError::Config`] for a key
    /// it cannot store, [`LockError::Unsupported`] for an upgrade.
    async fn contend<'a>(&'a self, req: &'a AcquireRequest) -> Result<Contention<'a>>;

    /// Pushes the lease of `owner`'s hold on `key` out to `ttl` from now, and returns
    /// the new deadline.
    ///
    /// # Errors
    ///
    /// [`LockError::Lost`] when `owner` no longer holds `key`.
    async fn extend(&self, key: &LockKey, owner: &OwnerId, ttl: Duration) -> Result<Instant>;

    /// Renews many holds at once. The default renews one by one; drivers that can
    /// batch (one SQL statement, one pipeline) override it.
    async fn extend_many(&self, renewals: &[Renewal]) -> Vec<Result<Instant>> {
        let mut out = Vec::with_capacity(renewals.len());
        for r in renewals {
            out.push(self.extend(&r.key, &r.owner, r.ttl).await);
        }
        out
    }

    /// Releases `owner`'s hold on `key`, whatever its mode. Returns whether `owner`
    /// held it.
    async fn release(&self, key: &LockKey, owner: &OwnerId) -> Result<bool>;

    /// Who holds `key` (mode, token, lease left, label) and how many wait, as far
    /// as the backend knows ([`Capabilities::inspect`]). Reads only.
    ///
    /// # Errors
    ///
    /// [`LockError::Unsupported`] by default; a backend error.
    async fn inspect(&self, key: &LockKey) -> Result<Inspection> {
        let _ = key;
        Err(LockError::Unsupported {
            driver: self.name(),
            capability: "inspection",
        })
    }

    /// Replaces what `owner`'s exclusive hold of `key` stores beside its owner id
    /// with `text` (the owner's label and a new value, [`super::holder_text`]),
    /// keeping its token and lease: how an election's leader proclaims a new value
    /// ([`crate::Leadership::proclaim`]). Drivers that can list it in
    /// [`Capabilities::proclaim`].
    ///
    /// # Errors
    ///
    /// [`LockError::Lost`] when `owner` no longer holds `key`;
    /// [`LockError::Unsupported`] by default; a backend error.
    async fn proclaim(&self, key: &LockKey, owner: &OwnerId, text: &str) -> Result<()> {
        let _ = (key, owner, text);
        Err(LockError::Unsupported {
            driver: self.name(),
            capability: "proclaim (changing an election leader's value)",
        })
    }

    /// The keys whose names start with `prefix` that may be held now (a listing
    /// may include a key whose last hold just ended: inspect each to be sure), in
    /// name order, at most `limit` of them: what `lockkit ls` shows. Drivers that
    /// can list it in [`Capabilities::list`].
    ///
    /// # Errors
    ///
    /// [`LockError::Unsupported`] by default, with why; a backend error.
    async fn list(&self, prefix: &str, limit: usize) -> Result<Vec<LockKey>> {
        let _ = (prefix, limit);
        Err(LockError::Unsupported {
            driver: self.name(),
            capability: "listing held locks",
        })
    }

    /// The locks of [`list`](Self::list) that are held, each as
    /// [`inspect`](Self::inspect) shows it: what [`crate::Locker::list`] returns.
    /// By default one `inspect` per listed key; a driver whose inspections each
    /// pay for something a listing needs once (ZooKeeper's sync with the leader)
    /// overrides it.
    ///
    /// # Errors
    ///
    /// As [`list`](Self::list) and [`inspect`](Self::inspect).
    async fn list_held(&self, prefix: &str, limit: usize) -> Result<Vec<Inspection>> {
        let mut out = Vec::new();
        for key in self.list(prefix, limit).await? {
            let seen = self.inspect(&key).await?;
            if seen.is_held() {
                out.push(seen);
            }
        }
        Ok(out)
    }

    /// Arms a signal that resolves once the holders of `key` may have changed
    /// (a grant, a release, a new value) *after this call returned*: how
    /// [`crate::Observer`] waits between readings without missing a change made
    /// between its reading and its wait (it arms, then reads, then waits). It may
    /// also resolve without a change. Drivers with a change signal list it in
    /// [`Capabilities::watch`]; the default never resolves, and the observer
    /// falls back to its interval.
    ///
    /// # Errors
    ///
    /// A backend error; the observer then waits its interval.
    async fn watch(&self, key: &LockKey) -> Result<ChangeSignal> {
        let _ = key;
        Ok(Box::pin(std::future::pending()))
    }

    /// One attempt at exclusive holds of every request of `reqs` (distinct keys,
    /// one owner none of whose holds they are, in the keys' byte order), all or
    /// none, in one request to the backend: every grant, in the requests'
    /// order, or `None` if any key is held or waited for, and then nothing was
    /// taken. It never waits. Drivers that can for any keys list it in
    /// [`Capabilities::several_keys_at_once`]; a driver that can for some sets
    /// only (a Redis Cluster: the locks of one slot) answers `None` for the
    /// others, without a request. [`crate::Locker::lock_all`] tries it first,
    /// and takes the keys one by one after `None` or `Unsupported`.
    ///
    /// # Errors
    ///
    /// [`LockError::Unsupported`] by default; a backend error (then nothing is
    /// held, or what is held is the caller's to release).
    async fn try_acquire_all(&self, reqs: &[AcquireRequest]) -> Result<Option<Vec<Grant>>> {
        let _ = reqs;
        Err(LockError::Unsupported {
            driver: self.name(),
            capability: "several keys in one request",
        })
    }

    /// Frees `key` whoever holds it: an operator's break-glass (Redisson's
    /// `forceUnlock`), and how the conformance suite makes a hold vanish. The holder
    /// learns at its next renewal. Returns whether there was a live holder.
    ///
    /// # Errors
    ///
    /// [`LockError::Unsupported`] by default.
    async fn force_release(&self, key: &LockKey) -> Result<bool> {
        let _ = key;
        Err(LockError::Unsupported {
            driver: self.name(),
            capability: "force_release",
        })
    }

    /// Removes every trace of `key` from the backend: any holder, any waiter's
    /// queue entry, and its fencing counter. This is how `lockkit check`, `lockkit
    /// bench` and the conformance suite leave nothing behind on a live backend.
    ///
    /// **Only for keys nobody will use again.** A purged key's tokens start over,
    /// so a resource that saw its old tokens refuses the new ones; and its holder
    /// learns of the loss only at its next renewal.
    ///
    /// # Errors
    ///
    /// [`LockError::Unsupported`] by default; a backend error.
    async fn purge(&self, key: &LockKey) -> Result<()> {
        let _ = key;
        Err(LockError::Unsupported {
            driver: self.name(),
            capability: "purge",
        })
    }
}
